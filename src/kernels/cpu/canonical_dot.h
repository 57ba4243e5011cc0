// Scalar form of the canonical 16-lane dot product (kernels/ops.h). It is the reference the SIMD paths must
// match bit for bit; keep it simple rather than fast.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"

namespace taco::cpu {

constexpr int kDotLanes = 16;

template <class LoadW>
inline float canonical_dot_scalar(const float* x, LoadW load_w, int64_t k) {
    float lanes[kDotLanes] = {};
    for (int64_t i = 0; i < k; ++i) lanes[i % kDotLanes] = std::fma(x[i], load_w(i), lanes[i % kDotLanes]);
    for (int step = kDotLanes / 2; step >= 1; step /= 2)
        for (int i = 0; i < step; ++i) lanes[i] += lanes[i + step];
    return lanes[0];
}

inline float canonical_dot_f32(const float* x, const float* w, int64_t k) {
    return canonical_dot_scalar(
        x, [w](int64_t i) { return w[i]; }, k);
}

// x · w where w is a row of the given float dtype (f32, f16 or bf16).
inline float canonical_dot_any(const float* x, const void* w, DType w_dtype, int64_t k) {
    switch (w_dtype) {
        case DType::kF32: return canonical_dot_f32(x, static_cast<const float*>(w), k);
        case DType::kF16: {
            auto* p = static_cast<const uint16_t*>(w);
            return canonical_dot_scalar(
                x, [p](int64_t i) { return f16_to_f32(p[i]); }, k);
        }
        case DType::kBF16: {
            auto* p = static_cast<const uint16_t*>(w);
            return canonical_dot_scalar(
                x, [p](int64_t i) { return bf16_to_f32(p[i]); }, k);
        }
        default:
            return canonical_dot_scalar(
                x, [w, w_dtype](int64_t i) { return load_as_f32(w, w_dtype, size_t(i)); }, k);
    }
}

}  // namespace taco::cpu
