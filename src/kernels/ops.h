// The backend-neutral op API: every op is declared once here and takes views only, small plain parameters and an
// explicit ExecContext. ops.cc checks shapes, dtypes and devices, then dispatches to the backend of ctx.device
// (kernels/cpu/<family>.cc; kernels/cuda/<family>.cu beside it). No op allocates tensor memory: outputs are views the
// caller owns (a Workspace); GPU temporaries come from ctx.scratch; CPU kernels keep per-thread scratch that grows
// once and is then reused. Index operands (ids, positions, slot mappings, block
// tables, offsets) are tensors on the op's device, never host vectors.
//
// Activations are f32 on the CPU backend; weights stay in their on-disk dtype (f32, f16, bf16) and are widened to
// fp32 in registers. Small per-channel vectors (norm weights, biases) are f32.
//
// Batch invariance (ARCHITECTURE.md, "Parity rule"): every reduction below has one fixed order per output
// element, independent of how many rows are in the batch, how they are tiled or threaded, and of the ISA.
// The canonical dot product of length K: 16 fp32 lanes, lane j accumulates x[k]*w[k] for k = j (mod 16) with
// fused multiply-add in increasing k, then lanes are summed as a tree: l[i] += l[i+8] (i<8), l[i] += l[i+4]
// (i<4), l[i] += l[i+2] (i<2), l[0] += l[1]. AVX2 (two 8-wide registers), AVX-512 (one 16-wide register) and
// scalar code all produce this bit for bit.
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "kernels/exec_context.h"

namespace taco::ops {

// y[m, n] = dot(x[m, :], w[n, :]) (+ bias[n]).
//   x: [M, K] act   w: [N, K] f32 | f16 | bf16 (row-major, as nn.Linear stores it)   bias: [N] f32 or nullptr
//   y: [M, N] act
void matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView& y);

// Several projections of one x (q / k / v, gate / up): outs[i].y = x . outs[i].w^T (+ *outs[i].bias), each checked as
// matmul and with exactly the bits of its own matmul call. On CUDA, decode shapes of one size class run as one
// launch of the skinny kernel (kernels/cuda/skinny_gemm.h); otherwise, and on the CPU, one matmul after another.
struct Projection {
    const TensorView* w;
    const TensorView* bias;  // or nullptr
    TensorView y;
};
void matmuls(const ExecContext& ctx, const TensorView& x, std::span<const Projection> outs);

// out[t, :] = table[ids[t], :].  ids: [T] i32; table: [V, H] float dtype; out: [T, H] act.
void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out);

// out[r, :] = src[indices[r], :].  src: [T, H]; indices: [R] i32 in [0, T); out: [R, H], src's dtype.
void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out);

// dst = src: same dtype and element count, both contiguous, or both [rows, cols] with contiguous rows (a rectangle
// of wider matrices: ForwardExecutor's block-table upload). On the CPU both are host memory; on CUDA any mix of host
// and device memory (an asynchronous copy on ctx.stream).
void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst);

// out = x / sqrt(mean(x^2) + eps) * (weight + weight_offset), per row.  x, out: [T, H] act; weight: [H] f32.
void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out);

// x += y (one rounding per element), then out = rms_norm(x): add_inplace and rms_norm with their bits, in one
// launch on the GPU (the residual add before a layer's norm).  x, y, out: [T, H] act; out aliases neither x nor y.
void add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& y, const TensorView& weight, float eps,
                  float weight_offset, const TensorView& out);

// out = (x - mean) / sqrt(var + eps) * weight + bias, per row.  bias: [H] f32 or nullptr.
void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out);

// LayerNorm over the last dim of each head with that head's own weight (and bias), in place (StableLM's
// qk_layernorm).  x: [T, H, D] act; weight: [H, D] f32; bias: [H, D] f32 or nullptr.
void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps);

// x += y, elementwise, same shape.
void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y);
// x *= s, elementwise (Gemma's sqrt(hidden) embedding scale).
void scale_inplace(const ExecContext& ctx, const TensorView& x, float s);
// x = cap * tanh(x / cap), elementwise (Gemma2's final logit soft-capping); cap > 0.
void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap);

enum class Activation { kSilu, kGeluTanh, kGeluErf, kRelu, kRelu2 };  // kRelu2: relu(x)^2 (Nemotron)

// out = act(gate) * up, elementwise.  gate, up, out: [T, I] act (out may alias gate).
void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, Activation act,
                      const TensorView& out);
// out = act(x . gate.w^T + gate.bias) * (x . up.w^T + up.bias): a gated MLP's gate / up projections and their
// activation, with the bits of matmuls({gate, up}) followed by gated_activation(gate.y, up.y, act, out). gate.y and
// up.y are scratch of out's shape that a backend may leave unwritten (the CUDA backend fuses the three where its
// skinny GEMM takes the pair, with TACO_CUDA_FUSED_GATED_UP=1). out may alias gate.y or up.y, never x.
void gated_projection(const ExecContext& ctx, const TensorView& x, const Projection& gate, const Projection& up,
                      Activation act, const TensorView& out);
// x = act(x) in place.
void activation_inplace(const ExecContext& ctx, const TensorView& x, Activation act);

// Applies rotary embedding in place to the first rotary_dim of each head.
//   x: [T, num_heads, head_dim] act; positions: [T] i32; table_offsets: [T] i32 or undefined (0): token t uses
//   table row positions[t] + table_offsets[t] (LongRoPE's long factors sit after the short ones in one table);
//   cos/sin tables: [rows, rotary_dim / 2] f32.
//   neox_style: rotate halves (x[i], x[i + d/2]) as Llama in HF; otherwise interleaved pairs (x[2i], x[2i+1]).
void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style);

// Writes the new tokens' K and V into the paged cache.
//   k, v: [T, num_kv_heads, head_dim] act; slot_mapping: [T] i64, slot = block * block_size + offset, -1 = padding
//   (skipped); k_cache, v_cache: [num_blocks, block_size, num_kv_heads, head_dim] in the cache dtype.
void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache);

// rotary_embedding of q and of k (the same positions and tables), then write_kv_cache of k and v: the three ops with
// their bits, in one launch on the GPU.  q: [T, num_heads, head_dim]; k, v: [T, num_kv_heads, head_dim].
void rotary_write_kv(const ExecContext& ctx, const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& positions, const TensorView& table_offsets, const TensorView& cos_table,
                     const TensorView& sin_table, int rotary_dim, bool neox_style, const TensorView& slot_mapping,
                     const TensorView& k_cache, const TensorView& v_cache);

// What paged attention needs to know about the sequences of a batch: views into the ForwardBatch.
struct AttentionMetadata {
    TensorView query_start;     // [S + 1] i32: tokens of sequence s are query_start[s] .. query_start[s + 1]
    TensorView seq_lens;        // [S] i32: the sequence's KV length once this step's tokens are written
    TensorView positions;       // [T] i32: absolute position of each query token
    TensorView block_tables;    // [S, max_blocks] i32: physical block of each logical block
    int32_t max_query_len = 0;  // host-known bounds of the step (launch configuration)
    int32_t max_seq_len = 0;
};

struct AttentionParams {
    float scale = 1.0f;
    int sliding_window = 0;   // 0: none; else a query at p sees keys at positions p - window + 1 .. p
    float logit_softcap = 0;  // 0: none; else softcap * tanh(score / softcap)
    // ALiBi: [num_heads] f32 slopes on the op's device, or undefined; head h adds slopes[h] * (key position -
    // query position) to each score after scaling (and soft-capping).
    TensorView alibi_slopes;
    // transformers' Falcon instead: the bias is bf16(slopes[h] * bf16(key position)), rounded to bfloat16 as its
    // ALiBi tensor is, and scaled with the score: (q.k + bias) * scale. Softmax ignores the per-query shift of the
    // absolute key position.
    bool alibi_bf16_key_positions = false;
};

// Causal attention over the paged cache (prefill chunks over cached prefixes and decode alike): query token
// at position p of sequence s attends to that sequence's keys at positions <= p (and within the window).
// Tokens past query_start[S] are padding: their output rows are left as they are.
//   q: [T, num_heads, head_dim] act, caches as write_kv_cache, out: [T, num_heads, head_dim] act.
//   GQA: head h reads kv head h / (num_heads / num_kv_heads).
// CUDA: head_dim up to 256, any block size; the cache in q's dtype or f32; max_seq_len must bound seq_lens. Long
// sequences in small batches split their keys over several CTAs (split-KV, kernels/cuda/paged_attention.h) with
// partials from ctx.scratch: the op takes up to 1 GiB of it (cuda::paged_attention_scratch_bytes) before its
// dry-run check, so the dry run reserves it too, and hands it back on return. Without ctx.scratch (or with an unsized
// one) nothing splits; a row's bits are the same either way. Rows whose metadata the kernel cannot use (a position
// past its sequence, block table or max_seq_len, a block id outside the cache) come out NaN on CUDA; the CPU aborts.
void paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionMetadata& batch, const AttentionParams& params, const TensorView& out);

// ---- Mixture of experts (model/moe_block.cc strings these together) ----

enum class MoeRouting {
    kSoftmaxTopK,  // softmax over all router logits, keep the k largest (Mixtral, Qwen MoE); optionally renormalised
    kSparseMixer,  // PhiMoE's sparsemixer at inference: two rounds of masked softmax around the running maximum
};

struct MoeRouteParams {
    MoeRouting routing = MoeRouting::kSoftmaxTopK;
    int top_k = 1;
    bool renormalize = true;       // kSoftmaxTopK: divide the k kept probabilities by their sum
    float sparsemixer_eps = 0.0f;  // kSparseMixer: router_jitter_noise
};

// Top-k routing of each token from its own router logits (ties to the lower expert id), rank order (largest
// first). Padding tokens (slot_mapping[t] < 0, when slot_mapping is defined) get expert id num_experts (none) and
// weight 0.  logits: [T, E] f32; slot_mapping: [T] i64 or undefined; ids: [T, k] i32; weights: [T, k] f32.
void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const MoeRouteParams& params, const TensorView& ids, const TensorView& weights);

// Stable counting sort of the T * k (token, rank) slots by expert: sorted_slots lists slot t * k + r grouped by
// expert in ascending id, in slot order within an expert, padding slots (id == E) last; slot_rows[slot] is that
// slot's row in the sorted order; expert_offsets[e] .. [e + 1] are expert e's rows (offsets[E] = rows that run).
//   ids: [T, k] i32; sorted_slots, slot_rows: [T * k] i32; expert_offsets: [E + 1] i32.
void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets);

// out[i, :] = x[sorted_slots[i] / top_k, :] for the rows that run (i < expert_offsets[E]); the rest are zeroed.
//   x: [T, H]; out: [T * k, H].
void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out);

// Grouped GEMM: rows expert_offsets[e] .. [e + 1] of x times expert e's weight: y[i, :] = x[i, :] . w[e, :, :]^T;
// rows past offsets[E] are zeroed.  x: [R, K] act; w: [E, N, K] (rows of each expert contiguous; the expert
// stride may be larger, a view into a fused gate_up stack); expert_offsets: [E + 1] i32; y: [R, N] act.
void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y);

// out[t, :] = sum over token t's ranks in ascending expert id of weights[t, r] * expert_out[slot_rows[t * k + r], :]
// (the order transformers adds experts in, independent of the batch). Padding tokens' slots have weight 0 and read
// rows that moe_gather and grouped_matmul zeroed, so their output is 0.
//   expert_out: [T * k, H]; slot_rows: [T * k] i32; ids: [T, k] i32; weights: [T, k] f32; out: [T, H].
void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out);

// out[t, :] += sigmoid(gate[t, 0]) * shared[t, :] (Qwen2-MoE's shared expert).  gate: [T, 1]; shared, out: [T, H].
void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate, const TensorView& out);

}  // namespace taco::ops
