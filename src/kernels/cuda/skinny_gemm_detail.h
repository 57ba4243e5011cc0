// What the two builds of the skinny GEMM share (skinny_gemm.cu: the register-streaming kernel for every GPU;
// skinny_gemm_bulk.cu: Hopper's bulk-copy ring): the outputs of one launch, in tiles of 8 rows of w.
// Plain C++17 header.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_once.h"
#include "kernels/cuda/skinny_gemm.h"

namespace taco::cuda {

constexpr int kSkinnyRowsOfW = 8;  // a tile: 8 consecutive rows of w (the mma's N), the whole of K

// Output i takes tiles [tile_end[i - 1], tile_end[i]); tile_end[count - 1] is the launch's number of tiles.
struct SkinnyOutputs {
    SkinnyOutput out[kSkinnyMaxOutputs];
    int64_t tile_end[kSkinnyMaxOutputs];
    int count;
};

// Enqueues y_i = x . w_i^T (+ bias_i) for every output on `stream` with the bulk-copy build (skinny_bulk_available
// must be true); tuning's stages and blocks_per_sm as in skinny_gemm.h (zeros: the defaults), aborting naming them
// when the device cannot run them.
void skinny_bulk_launch(const void* x, const SkinnyOutputs& outs, int64_t m, int64_t k, DType in_dtype, DType out_dtype,
                        const SkinnyTuning& tuning, void* stream);

// Enqueues the fused gate / up (skinny_gemm.h's skinny_gated, checked there) with `warps` warps splitting K (the
// register build's warps_for(N): 4 or 16).
void skinny_gated_launch(const SkinnyGated& p, int warps, DType dtype, void* stream);

}  // namespace taco::cuda
