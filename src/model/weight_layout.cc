#include "model/weight_layout.h"

#include <cstring>

namespace taco {

Tensor transposed_copy(const TensorView& matrix) {
    TACO_CHECK(matrix.ndim == 2 && matrix.is_contiguous());
    const int64_t rows = matrix.shape[0], cols = matrix.shape[1];
    const size_t elem = dtype_size_bytes(matrix.dtype);
    Tensor out = Tensor::empty({cols, rows}, matrix.dtype);
    const auto* src = static_cast<const unsigned char*>(matrix.data);
    auto* dst = out.as<unsigned char>();
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) std::memcpy(dst + (c * rows + r) * elem, src + (r * cols + c) * elem, elem);
    return out;
}

Tensor gather_rows(const TensorView& matrix, const std::vector<int64_t>& rows) {
    TACO_CHECK((matrix.ndim == 1 || matrix.ndim == 2) && matrix.is_contiguous());
    const int64_t num_rows = int64_t(rows.size());
    const int64_t cols = matrix.ndim == 2 ? matrix.shape[1] : 1;
    const size_t row_bytes = size_t(cols) * dtype_size_bytes(matrix.dtype);
    Tensor out =
        matrix.ndim == 2 ? Tensor::empty({num_rows, cols}, matrix.dtype) : Tensor::empty({num_rows}, matrix.dtype);
    const auto* src = static_cast<const unsigned char*>(matrix.data);
    for (int64_t i = 0; i < num_rows; ++i) {
        TACO_CHECK(rows[size_t(i)] >= 0 && rows[size_t(i)] < matrix.shape[0]);
        std::memcpy(out.as<unsigned char>() + size_t(i) * row_bytes, src + size_t(rows[size_t(i)]) * row_bytes,
                    row_bytes);
    }
    return out;
}

Result<QkvRows> qkv_rows(QkvLayout layout, int64_t heads, int64_t kv_heads, int64_t head_dim) {
    QkvRows out;
    auto append = [head_dim](std::vector<int64_t>& dst, int64_t first_row) {
        for (int64_t d = 0; d < head_dim; ++d) dst.push_back(first_row + d);
    };
    switch (layout) {
        case QkvLayout::kConcatenated:
            for (int64_t h = 0; h < heads; ++h) append(out.q, h * head_dim);
            for (int64_t h = 0; h < kv_heads; ++h) append(out.k, (heads + h) * head_dim);
            for (int64_t h = 0; h < kv_heads; ++h) append(out.v, (heads + kv_heads + h) * head_dim);
            return out;
        case QkvLayout::kPerHead:
            if (kv_heads != heads)
                return error("a per-head fused qkv needs as many kv heads as heads (got {} and {})", kv_heads, heads);
            for (int64_t h = 0; h < heads; ++h) {
                append(out.q, (3 * h) * head_dim);
                append(out.k, (3 * h + 1) * head_dim);
                append(out.v, (3 * h + 2) * head_dim);
            }
            return out;
        case QkvLayout::kPerKvGroup: {
            if (kv_heads <= 0 || heads % kv_heads != 0)
                return error("kv heads ({}) must divide heads ({})", kv_heads, heads);
            const int64_t group = heads / kv_heads;
            for (int64_t g = 0; g < kv_heads; ++g) {
                const int64_t base = g * (group + 2);
                for (int64_t i = 0; i < group; ++i) append(out.q, (base + i) * head_dim);
                append(out.k, (base + group) * head_dim);
                append(out.v, (base + group + 1) * head_dim);
            }
            return out;
        }
    }
    return error("unknown qkv layout");
}

}  // namespace taco
