// The launchers of the CUDA kernels in kernels/cuda/*.cu: plain pointers, sizes and dtypes, so the .cu files (C++17,
// which core/tensor.h is not) need no tensor types. kernels/cuda/view_ops.cc implements cuda_ops.h's ops by unpacking
// the views (contiguous, shapes and dtypes checked by ops.cc) into these. Each launcher queues its kernel on `stream`
// (a cudaStream_t), never synchronises or allocates, and aborts naming the kernel when the launch fails. Float
// operands are f32, f16 or bf16 (`*_dtype`) unless said otherwise; shapes are in elements.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace taco::cuda::launch {

// ops::Activation, as the kernels see it (view_ops.cc maps one to the other).
enum class ActivationKind { kSilu, kGeluTanh, kGeluErf, kRelu, kRelu2 };

// ---- basic_ops.cu ----
// out[t, :] = table[ids[t], :].  ids: [tokens]; table: [vocab, hidden] (f32, f16, bf16, f8e4m3, f8e5m2);
// out: [tokens, hidden].
void embedding(void* stream, const int32_t* ids, int64_t tokens, const void* table, DType table_dtype, int64_t vocab,
               int64_t hidden, void* out, DType out_dtype);
// out[r, :] = src[indices[r], :].  src: [src_rows, cols]; indices: [rows]; out: [rows, cols], src's dtype.
void gather_rows(void* stream, const void* src, DType dtype, int64_t src_rows, int64_t cols, const int32_t* indices,
                 int64_t rows, void* out);

// ---- pointwise_ops.cu: n elements each ----
void add_inplace(void* stream, void* x, const void* y, DType dtype, int64_t n);
void scale_inplace(void* stream, void* x, DType dtype, int64_t n, float s);
void softcap_inplace(void* stream, void* x, DType dtype, int64_t n, float cap);
// out = act(gate) * up; out may alias gate.
void gated_activation(void* stream, const void* gate, const void* up, void* out, DType dtype, int64_t n,
                      ActivationKind act);
void activation_inplace(void* stream, void* x, DType dtype, int64_t n, ActivationKind act);

// ---- norms.cu: x, out [rows, hidden] (out may alias x); weight, bias: [hidden] f32 (bias may be null) ----
void rms_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
              float eps, float weight_offset);
// x += delta (one rounding per element), then out = rms_norm(x): the bits of add_inplace and rms_norm. out != x.
void add_rms_norm(void* stream, void* x, const void* delta, void* out, DType dtype, int64_t rows, int64_t hidden,
                  const float* weight, float eps, float weight_offset);
void layer_norm(void* stream, const void* x, void* out, DType dtype, int64_t rows, int64_t hidden, const float* weight,
                const float* bias, float eps);
// x: [tokens, heads, dim] in place; weight, bias: [heads, dim] f32 (bias may be null).
void per_head_layer_norm(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t dim,
                         const float* weight, const float* bias, float eps);

// ---- rotary.cu ----
// x: [tokens, heads, head_dim] in place; positions, table_offsets (or null): [tokens]; cos/sin tables:
// [table_rows, rotary_dim / 2] f32.
void rotary_embedding(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t head_dim,
                      const int32_t* positions, const int32_t* table_offsets, const float* cos_table,
                      const float* sin_table, int64_t table_rows, int rotary_dim, bool neox_style);
// rotary_embedding of q [tokens, q_heads, head_dim] and k [tokens, kv_heads, head_dim] in place, then
// write_kv_cache of k and v (v: as k) into the caches ([num_slots, kv_heads * head_dim], cache_dtype): the bits of
// the three launches, in one.
void rotary_write_kv(void* stream, void* q, void* k, const void* v, DType dtype, int64_t tokens, int64_t q_heads,
                     int64_t kv_heads, int64_t head_dim, const int32_t* positions, const int32_t* table_offsets,
                     const float* cos_table, const float* sin_table, int64_t table_rows, int rotary_dim,
                     bool neox_style, const int64_t* slot_mapping, void* k_cache, void* v_cache, DType cache_dtype,
                     int64_t num_slots);

// ---- kv_cache.cu ----
// k, v: [tokens, row] in act_dtype (row = kv_heads * head_dim); slot_mapping: [tokens] (-1: skipped); k_cache,
// v_cache: [num_slots, row] in cache_dtype.
void write_kv_cache(void* stream, const void* k, const void* v, DType act_dtype, int64_t tokens, int64_t row,
                    const int64_t* slot_mapping, void* k_cache, void* v_cache, DType cache_dtype, int64_t num_slots);

// ---- moe_route.cu: logits [tokens, num_experts] f32; slot_mapping [tokens] or null; ids, weights [tokens, top_k] ----
void moe_route_softmax_top_k(void* stream, const float* logits, const int64_t* slot_mapping, int64_t tokens,
                             int num_experts, int top_k, bool renormalize, int32_t* ids, float* weights);
// top_k = 2.
void moe_route_sparse_mixer(void* stream, const float* logits, const int64_t* slot_mapping, int64_t tokens,
                            int num_experts, float eps, int32_t* ids, float* weights);

// ---- moe_ops.cu ----
// ids: [num_slots] in [0, num_experts]; sorted_slots, slot_rows: [num_slots]; expert_offsets: [num_experts + 1].
void moe_align(void* stream, const int32_t* ids, int64_t num_slots, int num_experts, int32_t* sorted_slots,
               int32_t* slot_rows, int32_t* expert_offsets);
// x: [tokens, hidden]; sorted_slots: [rows]; expert_offsets: [num_experts + 1]; out: [rows, hidden] (rows =
// tokens * top_k), x's dtype.
void moe_gather(void* stream, const void* x, DType dtype, int64_t hidden, const int32_t* sorted_slots,
                const int32_t* expert_offsets, int num_experts, int top_k, int64_t rows, void* out);
// expert_out: [rows, hidden]; slot_rows: [tokens * top_k]; ids, weights: [tokens, top_k]; out: [tokens, hidden].
void moe_combine(void* stream, const void* expert_out, DType dtype, int64_t rows, int64_t hidden,
                 const int32_t* slot_rows, const int32_t* ids, const float* weights, int64_t tokens, int top_k,
                 void* out);
// shared, out: [tokens, hidden]; gate: [tokens, 1]; all of one dtype.
void add_sigmoid_gated(void* stream, const void* shared, const void* gate, void* out, DType dtype, int64_t tokens,
                       int64_t hidden);

// ---- grouped_matmul.cu ----
// x: [rows, k] and y: [rows, n] in act_dtype; w: [num_experts, n, k] in w_dtype, expert e at w + e * expert_stride
// elements; expert_offsets: [num_experts + 1].
void grouped_matmul(void* stream, const void* x, void* y, DType act_dtype, int64_t rows, const void* w, DType w_dtype,
                    int64_t num_experts, int64_t n, int64_t k, int64_t expert_stride, const int32_t* expert_offsets);

}  // namespace taco::cuda::launch
