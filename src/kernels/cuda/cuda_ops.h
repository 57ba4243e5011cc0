// The CUDA backend of kernels/ops.h: one function per op, called by ops.cc after it has checked shapes, dtypes
// and devices (so these do not check them again). Every op is asynchronous on ctx.stream and templated inside its
// .cu on the activation dtype (f32, f16, bf16) with fp32 accumulation; a failed launch aborts naming the kernel.
// Plain C++ header: ops.cc includes it without nvcc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace taco::cuda {

void matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView& y);
void matmuls(const ExecContext& ctx, const TensorView& x, std::span<const ops::Projection> outs);
void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out);
void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out);
void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst);
void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out);
void add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& y, const TensorView& weight, float eps,
                  float weight_offset, const TensorView& out);
void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out);
void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps);
void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y);
void scale_inplace(const ExecContext& ctx, const TensorView& x, float s);
void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap);
void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, ops::Activation act,
                      const TensorView& out);
void activation_inplace(const ExecContext& ctx, const TensorView& x, ops::Activation act);
void gated_projection(const ExecContext& ctx, const TensorView& x, const ops::Projection& gate,
                      const ops::Projection& up, ops::Activation act, const TensorView& out);
// How gated_projection runs: kAuto fuses where TACO_CUDA_FUSED_GATED_UP allows and the skinny GEMM takes the pair;
// kFused where the skinny GEMM takes it (else separately); kSeparate never (tests compare the two).
enum class GatedProjection { kAuto, kFused, kSeparate };
void gated_projection_with(const ExecContext& ctx, const TensorView& x, const ops::Projection& gate,
                           const ops::Projection& up, ops::Activation act, const TensorView& out, GatedProjection how);
void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style);
void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache);
void rotary_write_kv(const ExecContext& ctx, const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& positions, const TensorView& table_offsets, const TensorView& cos_table,
                     const TensorView& sin_table, int rotary_dim, bool neox_style, const TensorView& slot_mapping,
                     const TensorView& k_cache, const TensorView& v_cache);
// partials: device scratch for split-KV of at least paged_attention_scratch_bytes (paged_attention.h), or undefined
// (no split-KV; the results are the same bits either way). ops.cc takes it from ctx.scratch.
void paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const ops::AttentionMetadata& batch, const ops::AttentionParams& params,
                     const TensorView& partials, const TensorView& out);
// Bytes of split-KV partials paged_attention can use for a step of this shape (paged_attention.h).
size_t paged_attention_scratch_bytes(int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t max_seq_len);
void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const ops::MoeRouteParams& params, const TensorView& ids, const TensorView& weights);
void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets);
void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out);
void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y);
void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out);
void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate, const TensorView& out);

}  // namespace taco::cuda
