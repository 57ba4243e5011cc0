// Row-wise and elementwise ops of the CPU backend: embedding, norms, residual add, activations. Each output
// row depends on its input row alone (fixed reduction order), so results are batch-invariant.
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/ops.h"

namespace taco::ops {
namespace {

void check_f32_2d(const TensorView& t, const char* what) {
    TACO_CHECK_MSG(t.ndim == 2 && t.dtype == DType::kF32 && t.is_contiguous(), "{} must be a contiguous 2-d f32 tensor",
                   what);
}

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

void embedding(const std::vector<int32_t>& ids, const TensorView& table, const TensorView& out) {
    TACO_CHECK_EQ(table.ndim, 2);
    check_f32_2d(out, "embedding output");
    TACO_CHECK_EQ(out.shape[0], int64_t(ids.size()));
    TACO_CHECK_EQ(out.shape[1], table.shape[1]);
    const int64_t hidden = table.shape[1];
    const size_t row_bytes = size_t(hidden) * dtype_size_bytes(table.dtype);
    for (size_t t = 0; t < ids.size(); ++t) {
        TACO_CHECK_MSG(ids[t] >= 0 && ids[t] < table.shape[0], "token id {} outside the vocabulary of {}", ids[t],
                       table.shape[0]);
        const void* row = static_cast<const uint8_t*>(table.data) + size_t(ids[t]) * row_bytes;
        float* dst = out.row<float>(int64_t(t));
        for (int64_t i = 0; i < hidden; ++i) dst[i] = load_as_f32(row, table.dtype, size_t(i));
    }
}

void rms_norm(const TensorView& x, const TensorView& weight, float eps, float weight_offset, const TensorView& out) {
    check_f32_2d(x, "rms_norm input");
    check_f32_2d(out, "rms_norm output");
    TACO_CHECK(weight.dtype == DType::kF32 && weight.ndim == 1 && weight.shape[0] == x.shape[1]);
    TACO_CHECK(out.shape[0] == x.shape[0] && out.shape[1] == x.shape[1]);
    const int64_t hidden = x.shape[1];
    const float* w = weight.as<float>();
    ThreadPool::global().parallel_for(x.shape[0], row_grain(hidden), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* src = x.row<float>(r);
            float* dst = out.row<float>(r);
            float mean_square = cpu::dot_f32(src, src, hidden) / float(hidden);
            float inv = 1.0f / std::sqrt(mean_square + eps);
            for (int64_t i = 0; i < hidden; ++i) dst[i] = (w[i] + weight_offset) * (src[i] * inv);
        }
    });
}

void layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps,
                const TensorView& out) {
    check_f32_2d(x, "layer_norm input");
    check_f32_2d(out, "layer_norm output");
    TACO_CHECK(weight.dtype == DType::kF32 && weight.ndim == 1 && weight.shape[0] == x.shape[1]);
    const int64_t hidden = x.shape[1];
    const float* w = weight.as<float>();
    const float* b = bias != nullptr ? bias->as<float>() : nullptr;
    ThreadPool::global().parallel_for(x.shape[0], row_grain(hidden), [&](int64_t begin, int64_t end) {
        std::vector<float> centered(static_cast<size_t>(hidden));
        for (int64_t r = begin; r < end; ++r) {
            const float* src = x.row<float>(r);
            float* dst = out.row<float>(r);
            float sum = 0;
            for (int64_t i = 0; i < hidden; ++i) sum += src[i];
            float mean = sum / float(hidden);
            for (int64_t i = 0; i < hidden; ++i) centered[size_t(i)] = src[i] - mean;
            float var = cpu::dot_f32(centered.data(), centered.data(), hidden) / float(hidden);
            float inv = 1.0f / std::sqrt(var + eps);
            for (int64_t i = 0; i < hidden; ++i) dst[i] = centered[size_t(i)] * inv * w[i] + (b ? b[i] : 0.0f);
        }
    });
}

void add_inplace(const TensorView& x, const TensorView& y) {
    TACO_CHECK(x.dtype == DType::kF32 && y.dtype == DType::kF32 && x.numel() == y.numel());
    float* a = x.as<float>();
    const float* b = y.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) a[i] += b[i];
}

void gated_activation(const TensorView& gate, const TensorView& up, Activation act, const TensorView& out) {
    check_f32_2d(gate, "gate");
    check_f32_2d(up, "up");
    check_f32_2d(out, "gated_activation output");
    TACO_CHECK(gate.numel() == up.numel() && gate.numel() == out.numel());
    const float* g = gate.as<float>();
    const float* u = up.as<float>();
    float* o = out.as<float>();
    ThreadPool::global().parallel_for(gate.numel(), 16384, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = activate(g[i], act) * u[i];
    });
}

void activation_inplace(const TensorView& x, Activation act) {
    TACO_CHECK(x.dtype == DType::kF32);
    float* p = x.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] = activate(p[i], act);
}

}  // namespace taco::ops
