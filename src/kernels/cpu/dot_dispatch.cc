#include "kernels/cpu/canonical_dot.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {

float dot_f32(const float* a, const float* b, int64_t k) {
    static const CpuIsa isa = matmul_isa();
    switch (isa) {
        case CpuIsa::kAvx512: return dot_f32_avx512(a, b, k);
        case CpuIsa::kAvx2: return dot_f32_avx2(a, b, k);
        case CpuIsa::kScalar: return canonical_dot_f32(a, b, k);
    }
    return canonical_dot_f32(a, b, k);
}

}  // namespace taco::cpu
