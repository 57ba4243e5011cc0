// The activations' fp32 formulas on the device (the CPU backend's, kernels/cpu/pointwise_ops.cc), shared by the
// elementwise kernels (pointwise_ops.cu) and the skinny GEMM's fused gate / up (skinny_gemm_gated.cu), so that an
// activation has the same bits in both.
#pragma once

#include "kernels/cuda/launch.h"

namespace taco::cuda {

__device__ __forceinline__ float activate(float x, launch::ActivationKind act) {
    using launch::ActivationKind;
    switch (act) {
        case ActivationKind::kSilu: return x / (1.0f + expf(-x));
        case ActivationKind::kGeluTanh: {
            const float k = 0.7978845608028654f;  // sqrt(2 / pi)
            return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
        }
        case ActivationKind::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
        case ActivationKind::kRelu: return x > 0 ? x : 0.0f;
        case ActivationKind::kRelu2: return x > 0 ? x * x : 0.0f;
    }
    return x;
}

}  // namespace taco::cuda
