// The backend-neutral op API: every op is declared once here. Each implementation checks shapes, dtypes and
// devices first, then dispatches (dtype, ISA) in one place. Activations are fp32; weights stay in their
// on-disk dtype (f32, f16, bf16) and are widened to fp32 in registers.
//
// Batch invariance (ARCHITECTURE.md, "Parity rule"): every reduction below has one fixed order per output
// element, independent of how many rows are in the batch, how they are tiled or threaded, and of the ISA.
// The canonical dot product of length K: 16 fp32 lanes, lane j accumulates x[k]*w[k] for k = j (mod 16) with
// fused multiply-add in increasing k, then lanes are summed as a tree: l[i] += l[i+8] (i<8), l[i] += l[i+4]
// (i<4), l[i] += l[i+2] (i<2), l[0] += l[1]. AVX2 (two 8-wide registers), AVX-512 (one 16-wide register) and
// scalar code all produce this bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace taco::ops {

// y[m, n] = dot(x[m, :], w[n, :]) (+ bias[n]).
//   x:    [M, K] f32          w: [N, K] f32 | f16 | bf16 (row-major, as nn.Linear stores it)
//   bias: [N] any float dtype or nullptr          y: [M, N] f32
void matmul(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y);

// The canonical dot product above, fp32 inputs.
float dot(const float* a, const float* b, int64_t k);

// out[t, :] = table[ids[t], :] widened to f32.  table: [V, H] float dtype; out: [T, H] f32.
void embedding(const std::vector<int32_t>& ids, const TensorView& table, const TensorView& out);

// out = x / sqrt(mean(x^2) + eps) * (weight + weight_offset), per row.  x, out: [T, H] f32; weight: [H].
void rms_norm(const TensorView& x, const TensorView& weight, float eps, float weight_offset, const TensorView& out);

// out = (x - mean) / sqrt(var + eps) * weight + bias, per row.  bias may be nullptr.
void layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps,
                const TensorView& out);

// x += y, elementwise, same shape f32.
void add_inplace(const TensorView& x, const TensorView& y);

// x *= s, elementwise f32 (Gemma's sqrt(hidden) embedding scale).
void scale_inplace(const TensorView& x, float s);
// x = cap * tanh(x / cap), elementwise f32 (Gemma2's final logit soft-capping); cap > 0.
void softcap_inplace(const TensorView& x, float cap);
// LayerNorm over the last dim of each head with that head's own weight (and bias), in place (StableLM's
// qk_layernorm).  x: [T, H, D] f32; weight: [H, D] f32; bias: [H, D] f32 or nullptr.
void per_head_layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps);

enum class Activation { kSilu, kGeluTanh, kGeluErf, kRelu, kRelu2 };  // kRelu2: relu(x)^2 (Nemotron)

// out = act(gate) * up, elementwise.  gate, up, out: [T, I] f32 (out may alias gate).
void gated_activation(const TensorView& gate, const TensorView& up, Activation act, const TensorView& out);
// x = act(x) in place.
void activation_inplace(const TensorView& x, Activation act);

// Applies rotary embedding in place to the first rotary_dim of each head.
//   x: [T, num_heads, head_dim] f32, positions: [T], cos/sin tables: [max_positions, rotary_dim / 2] f32.
//   neox_style: rotate halves (x[i], x[i + d/2]) as Llama in HF; otherwise interleaved pairs (x[2i], x[2i+1]).
void rotary_embedding(const TensorView& x, const std::vector<int32_t>& positions, const TensorView& cos_table,
                      const TensorView& sin_table, int rotary_dim, bool neox_style);

// Writes the new tokens' K and V into the paged cache.
//   k, v: [T, num_kv_heads, head_dim] f32; slot_mapping[t] = block * block_size + offset;
//   k_cache, v_cache: [num_blocks, block_size, num_kv_heads, head_dim] f32.
void write_kv_cache(const TensorView& k, const TensorView& v, const std::vector<int64_t>& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache);

// What paged attention needs to know about the sequences of a batch.
struct AttentionBatch {
    std::vector<int32_t> query_start;                // [S + 1]: tokens of sequence s are query_start[s]..[s+1]
    std::vector<int32_t> positions;                  // [T]: absolute position of each query token
    std::vector<std::vector<int32_t>> block_tables;  // [S][num_blocks_of_s]
};

struct AttentionParams {
    float scale = 1.0f;
    int sliding_window = 0;   // 0: none; else a query at p sees keys at positions p - window + 1 .. p
    float logit_softcap = 0;  // 0: none; else softcap * tanh(score / softcap)
    // ALiBi: [num_heads] slopes or nullptr; head h adds slopes[h] * (key position - query position) to each
    // score after scaling (and soft-capping).
    const float* alibi_slopes = nullptr;
    // transformers' Falcon instead: the bias is bf16(slopes[h] * bf16(key position)), rounded to bfloat16 as its
    // ALiBi tensor is, and scaled with the score: (q.k + bias) * scale. Softmax ignores the per-query shift of the
    // absolute key position.
    bool alibi_bf16_key_positions = false;
};

// Causal attention over the paged cache (prefill chunks over cached prefixes and decode alike): query token
// at position p of sequence s attends to that sequence's keys at positions <= p (and within the window).
//   q: [T, num_heads, head_dim] f32, caches as write_kv_cache, out: [T, num_heads, head_dim] f32.
//   GQA: head h reads kv head h / (num_heads / num_kv_heads).
void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionBatch& batch, const AttentionParams& params, const TensorView& out);

}  // namespace taco::ops
