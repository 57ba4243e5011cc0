// One 32-column chunk of the skinny GEMM's register build (skinny_gemm.cu) and of its fused gate / up
// (skinny_gemm_gated.cu): lane (g, t)'s 16 bytes of x's rows g and g + 8 at the chunk's columns 8 t .. 8 t + 7, and
// the two mma.sync m16n8k16 that take them with 16 bytes of a row of w (skinny_gemm.cu's header gives the mapping).
// Both kernels run these same instructions, so a fused output has the bits of the separate one.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/mma.cuh"

namespace taco::cuda {

// x's rows g (xv) and g + 8 (xu, zeros unless kUpperRows) at column `col` of the chunk, zeros past k or past M.
template <class T, bool kUpperRows>
__device__ __forceinline__ void load_x_chunk(uint4& xv, uint4& xu, const T* x_row, const T* x_upper, int64_t col,
                                             bool in_k, bool x_ok, bool x_upper_ok) {
    const uint4 zero = make_uint4(0, 0, 0, 0);
    xv = in_k && x_ok ? __ldg(reinterpret_cast<const uint4*>(x_row + col)) : zero;
    xu = zero;
    if constexpr (kUpperRows) {
        if (in_k && x_upper_ok) xu = __ldg(reinterpret_cast<const uint4*>(x_upper + col));
    }
}

// acc += the chunk's products: x's 16 rows (xv, xu) by w's 8 rows (wv: this lane's row's 8 columns).
template <class T>
__device__ __forceinline__ void mma_chunk(float (&acc)[4], const uint4& xv, const uint4& xu, const uint4& wv) {
    mma_m16n8k16<T>(acc, xv.x, xu.x, xv.y, xu.y, wv.x, wv.y);
    mma_m16n8k16<T>(acc, xv.z, xu.z, xv.w, xu.w, wv.z, wv.w);
}

}  // namespace taco::cuda
