// Row-wise and elementwise ops of the CPU backend: embedding, norms, residual add, activations. Each output
// row depends on its input row alone (fixed reduction order), so results are batch-invariant.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/dot_internal.h"

namespace taco::cpu {
using ops::Activation;
namespace {

// Rows per task: enough work per task to amortise the pool's hand-off.
int64_t row_grain(int64_t row_elements) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_elements)); }

float activate(float x, Activation act) {
    switch (act) {
        case Activation::kSilu: return x / (1.0f + std::exp(-x));
        case Activation::kGeluTanh: {
            const float k = 0.7978845608028654f;  // sqrt(2 / pi)
            return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
        }
        case Activation::kGeluErf: return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
        case Activation::kRelu: return x > 0 ? x : 0.0f;
        case Activation::kRelu2: return x > 0 ? x * x : 0.0f;
    }
    return x;
}

}  // namespace

void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out) {
    const int64_t hidden = table.shape[1];
    const size_t row_bytes = size_t(hidden) * dtype_size_bytes(table.dtype);
    const int32_t* id = ids.as<int32_t>();
    for (int64_t t = 0; t < ids.shape[0]; ++t) {
        TACO_CHECK_MSG(id[t] >= 0 && id[t] < table.shape[0], "token id {} outside the vocabulary of {}", id[t],
                       table.shape[0]);
        const void* row = static_cast<const uint8_t*>(table.data) + size_t(id[t]) * row_bytes;
        float* dst = out.row<float>(t);
        for (int64_t i = 0; i < hidden; ++i) dst[i] = load_as_f32(row, table.dtype, size_t(i));
    }
}

void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out) {
    const int32_t* index = indices.as<int32_t>();
    const int64_t cols = src.shape[1];
    for (int64_t r = 0; r < indices.shape[0]; ++r) {
        TACO_CHECK_MSG(index[r] >= 0 && index[r] < src.shape[0], "gather_rows: row {} of {}", index[r], src.shape[0]);
        std::copy_n(src.row<float>(index[r]), cols, out.row<float>(r));
    }
}

void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst) {
    if (src.data == dst.data) return;
    if (src.is_contiguous() && dst.is_contiguous()) {
        std::memcpy(dst.data, src.data, src.nbytes());
        return;
    }
    // Rows of a rectangle (ops.cc checked the shapes and strides).
    const size_t row_bytes = size_t(src.shape[1]) * dtype_size_bytes(src.dtype);
    const size_t src_pitch = size_t(src.strides[0]) * dtype_size_bytes(src.dtype);
    const size_t dst_pitch = size_t(dst.strides[0]) * dtype_size_bytes(dst.dtype);
    for (int64_t r = 0; r < src.shape[0]; ++r)
        std::memcpy(static_cast<char*>(dst.data) + size_t(r) * dst_pitch,
                    static_cast<const char*>(src.data) + size_t(r) * src_pitch, row_bytes);
}

void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out) {
    const int64_t hidden = x.shape[1];
    const float* w = weight.as<float>();
    ThreadPool::global().parallel_for(x.shape[0], row_grain(hidden), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* src = x.row<float>(r);
            float* dst = out.row<float>(r);
            float mean_square = dot_f32(src, src, hidden) / float(hidden);
            float inv = 1.0f / std::sqrt(mean_square + eps);
            for (int64_t i = 0; i < hidden; ++i) dst[i] = (w[i] + weight_offset) * (src[i] * inv);
        }
    });
}

void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out) {
    const int64_t hidden = x.shape[1];
    const float* w = weight.as<float>();
    const float* b = bias != nullptr ? bias->as<float>() : nullptr;
    ThreadPool::global().parallel_for(x.shape[0], row_grain(hidden), [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> centered;  // grows once per thread, then reused
        if (centered.size() < size_t(hidden)) centered.resize(size_t(hidden));
        for (int64_t r = begin; r < end; ++r) {
            const float* src = x.row<float>(r);
            float* dst = out.row<float>(r);
            float sum = 0;
            for (int64_t i = 0; i < hidden; ++i) sum += src[i];
            float mean = sum / float(hidden);
            for (int64_t i = 0; i < hidden; ++i) centered[size_t(i)] = src[i] - mean;
            float var = dot_f32(centered.data(), centered.data(), hidden) / float(hidden);
            float inv = 1.0f / std::sqrt(var + eps);
            for (int64_t i = 0; i < hidden; ++i) dst[i] = centered[size_t(i)] * inv * w[i] + (b ? b[i] : 0.0f);
        }
    });
}

void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y) {
    float* a = x.as<float>();
    const float* b = y.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) a[i] += b[i];
}

void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, Activation act,
                      const TensorView& out) {
    const float* g = gate.as<float>();
    const float* u = up.as<float>();
    float* o = out.as<float>();
    ThreadPool::global().parallel_for(gate.numel(), 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = activate(g[i], act) * u[i];
    });
}

void activation_inplace(const ExecContext& ctx, const TensorView& x, Activation act) {
    float* p = x.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] = activate(p[i], act);
}

}  // namespace taco::cpu
