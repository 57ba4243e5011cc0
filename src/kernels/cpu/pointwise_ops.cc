// Elementwise and per-head ops some families add to the generic decoder: embedding scale, logit soft-capping and
// StableLM's per-head LayerNorm. Each element or (token, head) row is computed on its own, so results are
// batch-invariant.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/dot_internal.h"

namespace taco::cpu {

void scale_inplace(const ExecContext& ctx, const TensorView& x, float s) {
    float* p = x.as<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] *= s;
}

void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap) {
    float* p = x.as<float>();
    // As transformers: divide, tanh, multiply (not a precomputed reciprocal).
    for (int64_t i = 0, n = x.numel(); i < n; ++i) p[i] = std::tanh(p[i] / cap) * cap;
}

void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps) {
    const int64_t tokens = x.shape[0], heads = x.shape[1], dim = x.shape[2];
    thread_local std::vector<float> centered;  // grows once per thread, then reused
    if (centered.size() < size_t(dim)) centered.resize(size_t(dim));
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
            const float var = dot_f32(centered.data(), centered.data(), dim) / float(dim);
            const float inv = 1.0f / std::sqrt(var + eps);
            for (int64_t i = 0; i < dim; ++i) v[i] = centered[size_t(i)] * inv * w[i] + (b ? b[i] : 0.0f);
        }
    }
}

}  // namespace taco::cpu
