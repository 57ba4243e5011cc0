// Rearranging checkpoint weights at load, for layouts the matmul cannot read directly: GPT-2's Conv1D
// ([in, out]) and fused q/k/v projections. Copies keep the on-disk dtype, so the values are unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "model/arch_spec.h"

namespace taco {

// [rows, cols] -> [cols, rows], same dtype.
Tensor transposed_copy(const TensorView& matrix);

// out[i] = matrix[rows[i]] (rows of a 2-d tensor, or elements of a 1-d one), same dtype. rows are in range.
Tensor gather_rows(const TensorView& matrix, const std::vector<int64_t>& rows);

// Which output rows of a fused qkv projection hold q ([heads * head_dim], head-major), k and v
// ([kv_heads * head_dim] each). Error when the layout cannot hold these head counts.
struct QkvRows {
    std::vector<int64_t> q, k, v;
};
Result<QkvRows> qkv_rows(QkvLayout layout, int64_t heads, int64_t kv_heads, int64_t head_dim);

}  // namespace taco
