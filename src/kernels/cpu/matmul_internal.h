// Internal interface between the matmul dispatcher and its ISA-specific implementations.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace taco::cpu {

struct MatmulArgs {
    const float* x;   // [m, k]
    const void* w;    // [n, k] in w_dtype
    DType w_dtype;    // f32 | f16 | bf16
    float* y;         // [m, n]
    int64_t m, n, k;
};

void matmul_scalar(const MatmulArgs& args);
// Picks the widest implementation the CPU supports (TACO_CPU_ISA=scalar|avx2|avx512 forces one, for tests
// and benchmarks).
void matmul_dispatch(const MatmulArgs& args);

}  // namespace taco::cpu
