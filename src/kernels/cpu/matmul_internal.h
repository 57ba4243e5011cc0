// Internal interface between the matmul dispatcher and its ISA-specific implementations.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace taco::cpu {

struct MatmulArgs {
    const float* x;  // [m, k]
    const void* w;   // [n, k] in w_dtype
    DType w_dtype;   // f32 | f16 | bf16
    float* y;        // [m, n]
    int64_t m, n, k;
};

enum class CpuIsa { kScalar, kAvx2, kAvx512 };

// "scalar" | "avx2" | "avx512".
const char* cpu_isa_name(CpuIsa isa);
// Whether this CPU can run the matmul path of `isa` (avx2 also needs fma and f16c; avx512 needs f, bw, vl, dq).
bool cpu_supports(CpuIsa isa);

// Every path writes y bit for bit equal to canonical_dot_any per output element (kernels/ops.h), whatever the
// shapes and the thread count. The SIMD paths must only be called where cpu_supports() says so.
void matmul_scalar(const MatmulArgs& args);
void matmul_avx2(const MatmulArgs& args);
void matmul_avx512(const MatmulArgs& args);
void matmul_with_isa(CpuIsa isa, const MatmulArgs& args);

// The ISA matmul_dispatch uses: the widest the CPU supports, chosen once; TACO_CPU_ISA=scalar|avx2|avx512
// forces one (a check fails if the CPU lacks it).
CpuIsa matmul_isa();
// The choice matmul_isa() makes for TACO_CPU_ISA = `forced` (nullptr or "" when unset).
CpuIsa choose_matmul_isa(const char* forced);
const char* matmul_isa_name();
void matmul_dispatch(const MatmulArgs& args);

// A register tile of a SIMD path: y[m0, m0 + mr) x [n0, n0 + nr) over the whole of K, for 1 <= mr <= max_mr
// and 1 <= nr <= max_nr. Each output is one canonical dot product, so tiles may run in any order.
using MatmulTileFn = void (*)(const MatmulArgs& args, int64_t m0, int mr, int64_t n0, int nr);
struct MatmulTiling {
    int max_mr;
    int max_nr;
    MatmulTileFn tile;
};

// M is blocked so a block's x rows stay in L2 while the weight tiles stream past them; threads split the
// (M block, weight tile) pairs. Compiled for baseline x86-64: the ISA lives in the tile function only.
void matmul_tiled(const MatmulArgs& args, const MatmulTiling& tiling);

}  // namespace taco::cpu
