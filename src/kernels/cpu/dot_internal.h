// The canonical 16-lane dot product (kernels/ops.h) of two fp32 vectors, per ISA; all bit-identical to
// canonical_dot_f32. Used by attention (q.k) and norms; the scalar form calls libm's fma, which is exact but
// slow on machines without FMA hardware, so the SIMD forms matter for speed.
#pragma once

#include <cstdint>

namespace taco::cpu {

float dot_f32_avx2(const float* a, const float* b, int64_t k);
float dot_f32_avx512(const float* a, const float* b, int64_t k);
// The widest the machine (and TACO_CPU_ISA) allows, chosen once.
float dot_f32(const float* a, const float* b, int64_t k);

}  // namespace taco::cpu
