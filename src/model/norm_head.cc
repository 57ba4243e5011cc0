#include "model/norm_head.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace taco {

Tensor rows_l2_normalized(const TensorView& matrix) {
    TACO_CHECK(matrix.ndim == 2 && matrix.is_contiguous());
    const int64_t rows = matrix.shape[0], cols = matrix.shape[1];
    Tensor out = Tensor::empty({rows, cols}, DType::kF32);
    float* dst = out.as<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float* row = dst + r * cols;
        double sum_sq = 0;
        for (int64_t c = 0; c < cols; ++c) {
            row[c] = load_as_f32(matrix.data, matrix.dtype, size_t(r * cols + c));
            sum_sq += double(row[c]) * double(row[c]);
        }
        const float norm = std::max(float(std::sqrt(sum_sq)), 1e-12f);
        for (int64_t c = 0; c < cols; ++c) row[c] /= norm;
    }
    return out;
}

}  // namespace taco
