// Elementwise and per-head ops some families add to the generic decoder: embedding scale, logit soft-capping and
// StableLM's per-head LayerNorm. Each element or (token, head) row is computed on its own, so results are
// batch-invariant.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/ops.h"

namespace taco::ops {

void scale_inplace(const TensorView& x, float s) {
    TACO_CHECK(x.dtype == DType::kF32 && x.is_contiguous());
    float* p = x.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] *= s;
}

void softcap_inplace(const TensorView& x, float cap) {
    TACO_CHECK(x.dtype == DType::kF32 && x.is_contiguous());
    TACO_CHECK_GT(cap, 0.0f);
    float* p = x.as<float>();
    // As transformers: divide, tanh, multiply (not a precomputed reciprocal).
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] = std::tanh(p[i] / cap) * cap;
}

void per_head_layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps) {
    TACO_CHECK(x.ndim == 3 && x.dtype == DType::kF32 && x.is_contiguous());
    const int64_t tokens = x.shape[0], heads = x.shape[1], dim = x.shape[2];
    TACO_CHECK(weight.ndim == 2 && weight.dtype == DType::kF32 && weight.shape[0] == heads && weight.shape[1] == dim);
    if (bias != nullptr)
        TACO_CHECK(bias->ndim == 2 && bias->dtype == DType::kF32 && bias->shape[0] == heads && bias->shape[1] == dim);
    std::vector<float> centered(static_cast<size_t>(dim));
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t h = 0; h < heads; ++h) {
            float* v = x.as<float>() + (t * heads + h) * dim;
            const float* w = weight.as<float>() + h * dim;
            const float* b = bias != nullptr ? bias->as<float>() + h * dim : nullptr;
            // The same arithmetic as ops::layer_norm on one row.
            float sum = 0;
            for (int64_t i = 0; i < dim; ++i) sum += v[i];
            const float mean = sum / float(dim);
            for (int64_t i = 0; i < dim; ++i) centered[size_t(i)] = v[i] - mean;
            const float var = cpu::dot_f32(centered.data(), centered.data(), dim) / float(dim);
            const float inv = 1.0f / std::sqrt(var + eps);
            for (int64_t i = 0; i < dim; ++i) v[i] = centered[size_t(i)] * inv * w[i] + (b ? b[i] : 0.0f);
        }
    }
}

}  // namespace taco::ops
