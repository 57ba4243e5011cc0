// A plain scalar reference of every op in kernels/ops.h, written from the contracts documented there (never by
// calling a backend), for the parity harness (op_parity_test.cc) to compare each backend against.
//
// Inputs are host views of any float dtype, read element by element through their strides and widened to double
// (so the reference sees exactly the values a backend was given, whatever its activation dtype); index operands
// are i32 / i64 host views. Sums, norms, softmaxes, rotations and activations are computed in double. Results are
// doubles in the row-major order of the op's output; an in-place op returns the new value of its operand, and an
// op that leaves some of its output alone (padding rows of attention) takes that output's old value.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"

namespace taco::ref {

using Values = std::vector<double>;

// ---- Reading host views ----

// Element i (row-major over the view's shape) of a float view, through its strides.
double value_at(const TensorView& t, int64_t i);
// Every element of a float view in row-major order.
Values values_of(const TensorView& t);
// Element i of an i32 or i64 view.
int64_t index_at(const TensorView& t, int64_t i);

// x rounded to bfloat16 (nearest even), as torch rounds a bf16 tensor.
double round_to_bf16(double x);

// ---- Dense ops ----

// [M, N] = x [M, K] . w [N, K]^T (+ bias [N]).
Values matmul(const TensorView& x, const TensorView& w, const TensorView* bias);
double dot(const float* a, const float* b, int64_t k);
Values embedding(const TensorView& ids, const TensorView& table);      // [T, H]
Values gather_rows(const TensorView& src, const TensorView& indices);  // [R, H]
Values copy(const TensorView& src);                                    // src's elements
Values rms_norm(const TensorView& x, const TensorView& weight, double eps, double weight_offset);
Values layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, double eps);
Values per_head_layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, double eps);
Values add(const TensorView& x, const TensorView& y);
Values scale(const TensorView& x, double s);
Values softcap(const TensorView& x, double cap);
double activate(double x, ops::Activation act);
Values gated_activation(const TensorView& gate, const TensorView& up, ops::Activation act);
Values activation(const TensorView& x, ops::Activation act);

// ---- Attention ----

// x [T, heads, head_dim] after rotating the first rotary_dim of each head by table row positions[t] (+
// table_offsets[t] when defined).
Values rotary_embedding(const TensorView& x, const TensorView& positions, const TensorView& table_offsets,
                        const TensorView& cos_table, const TensorView& sin_table, int rotary_dim, bool neox_style);

struct KvCache {
    Values k, v;  // [num_blocks, block_size, num_kv_heads, head_dim] each
};
// The caches after writing k, v [T, kv_heads, head_dim] at their slots (slot -1: skipped).
KvCache write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                       const TensorView& k_cache, const TensorView& v_cache);

// [T, heads, head_dim]; rows of tokens past query_start[S] are out_before's.
Values paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                       const ops::AttentionMetadata& batch, const ops::AttentionParams& params,
                       const TensorView& out_before);

// ---- Mixture of experts ----

struct Routing {
    std::vector<int32_t> ids;  // [T, k]
    Values weights;            // [T, k]
};
Routing moe_route(const TensorView& logits, const TensorView& slot_mapping, const ops::MoeRouteParams& params);

struct Alignment {
    std::vector<int32_t> sorted_slots;    // [T * k]
    std::vector<int32_t> slot_rows;       // [T * k]
    std::vector<int32_t> expert_offsets;  // [E + 1]
};
Alignment moe_align(const TensorView& ids, int num_experts);

Values moe_gather(const TensorView& x, const TensorView& sorted_slots, const TensorView& expert_offsets, int top_k);
Values grouped_matmul(const TensorView& x, const TensorView& w, const TensorView& expert_offsets);
Values moe_combine(const TensorView& expert_out, const TensorView& slot_rows, const TensorView& ids,
                   const TensorView& weights);
Values add_sigmoid_gated(const TensorView& shared, const TensorView& gate, const TensorView& out_before);

}  // namespace taco::ref
