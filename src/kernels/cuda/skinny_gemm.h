// The skinny GEMM of ops::matmul on CUDA: y [M, N] = x [M, K] . w [N, K]^T (+ bias [N] f32) for the decode shapes,
// M <= kSkinnyMaxRows, where cuBLASLt reaches only part of the memory bandwidth on the small matrices (BENCHMARKS.md:
// 28% on 4096x4096 at M=1). Memory-bound by design: w is streamed once in tiles of 8 rows, and the tensor cores
// (mma.sync m16n8k16, x's M rows padded to 16 with zeros) do the products, so that 16 rows cost the CUDA cores no
// more than one (a CUDA-core kernel is bound by its FMAs from M ~ 4 on). Two builds:
//   - bulk copy (skinny_gemm_bulk.cu, Hopper and later): a persistent grid whose blocks stream their tiles through a
//     ring of shared-memory stages filled by the bulk copy engine, so the memory system never waits on a block's
//     start or end; it runs the matrices it is faster on (up to 8192 rows, K <= 4096: q / k / v, o_proj);
//   - registers (skinny_gemm.cu, every GPU): one block per tile, its warps loading w into registers, 16 bytes a load.
//
// Order of the sums (ARCHITECTURE.md "Parity rule"): an output element is the fp32 sum of its K products in an order
// fixed by the shape alone (each warp's chunks of K in order through the mma, then the warps in order), never by M or
// by the other rows, so a row has the same bits alone or in any batch of up to kSkinnyMaxRows rows, and the same call
// gives the same bits every time (no atomics). The bias is added in fp32 before the one rounding to y's dtype. The
// two builds sum in different orders, and which one runs follows N and K only.
// Plain C++17 header (skinny_gemm.cu).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/launch.h"

namespace taco::cuda {

constexpr int64_t kSkinnyMaxRows = 16;

// Whether the skinny kernel takes this product: x and w f16 or bf16 alike, y in their dtype or f32, 1 <= m <=
// kSkinnyMaxRows, k a multiple of 8 and x, w 16-byte aligned (its vector loads).
bool skinny_gemm_applies(int64_t m, int64_t n, int64_t k, DType in_dtype, DType out_dtype, const void* x,
                         const void* w);

// Which build runs and how (cuda_gemm_bench sweeps these; ops::matmul takes the defaults). Zeros are the defaults.
struct SkinnyTuning {
    enum class Kernel { kAuto, kRegisters, kBulkCopy };
    Kernel kernel = Kernel::kAuto;  // kAuto: by N and K (skinny_gemm.cu's bulk_by_default), never by M
    int stages = 0;                 // bulk copy: shared-memory stages of the ring, 2 to 13
    int blocks_per_sm = 0;          // bulk copy: resident blocks per multiprocessor, 1 or 2 (their stages must fit)
};

// Whether this device runs the bulk-copy build (compute capability 9.0 or later, with its code in the binary).
bool skinny_bulk_available();

// TACO_CUDA_SKINNY_BULK_WIDE, read once (env_switch): unset or 1, kAuto also takes the bulk build for matrices of
// up to 8192 rows with K > 4096 (down_proj); 0, the register build there. Unlike the backend's other switches it
// changes bits: those products sum in the bulk build's order instead of the register build's (a row's bits still do
// not depend on its batch). On an H100 bench latency went 172.5 -> 174.2 tok/s with it and bench batch 1,227 ->
// 1,235 at bs=8, 3,719 -> 3,742 at bs=32, 6,193 -> 6,250 at bs=64; the CUDA suites (goldens, graphs, 286 tests)
// passed with it (bench/results/h100-2026-12-08).
bool skinny_bulk_wide_enabled();

// Enqueues the product on `stream` (a cudaStream_t); bias may be null. Aborts naming the shape when
// skinny_gemm_applies is false, naming the tuning when it is not one the device can run, or when the launch fails.
void skinny_gemm(const void* x, const void* w, const float* bias, void* y, int64_t m, int64_t n, int64_t k,
                 DType in_dtype, DType out_dtype, void* stream, const SkinnyTuning& tuning = {});

// Several products of the same x in one launch (fused q / k / v, gate / up): y_i [M, n_i] = x . w_i^T (+ bias_i),
// each with the bits of its own skinny_gemm call. Up to kSkinnyMaxOutputs outputs, each one skinny_gemm_applies
// to, all of one size class (the block size and the build follow N: more than 8192 rows or not).
constexpr int kSkinnyMaxOutputs = 4;
struct SkinnyOutput {
    const void* w;
    const float* bias;  // or null
    void* y;
    int64_t n;
};
bool skinny_gemm_group_applies(int64_t m, int64_t k, DType in_dtype, DType out_dtype, const void* x,
                               const SkinnyOutput* outs, int count);
void skinny_gemm_group(const void* x, const SkinnyOutput* outs, int count, int64_t m, int64_t k, DType in_dtype,
                       DType out_dtype, void* stream, const SkinnyTuning& tuning = {});

// The gate / up pair of a gated MLP with its activation in one launch (skinny_gemm_gated.cu): out [M, N] =
// act(x . w_gate^T + b_gate) * (x . w_up^T + b_up), with the bits of skinny_gemm_group's gate and up (each rounded to
// the dtype) followed by launch::gated_activation. Biases may be null; out must not overlap x.
struct SkinnyGated {
    const void* x;
    const void* w_gate;
    const float* b_gate;
    const void* w_up;
    const float* b_up;
    void* out;
    int64_t m, n, k;
    launch::ActivationKind act;
};

// Whether skinny_gated takes the pair: both products skinny_gemm_applies to with y in the operands' dtype, and the
// separate launch would run them on the register build (the bulk build sums in another order, so a pair it would run
// keeps the separate launches).
bool skinny_gated_applies(int64_t m, int64_t n, int64_t k, DType dtype, const void* x, const void* w_gate,
                          const void* w_up);

// Enqueues the fused pair on `stream`; aborts naming the shape when skinny_gated_applies is false.
void skinny_gated(const SkinnyGated& p, DType dtype, void* stream);

// TACO_CUDA_FUSED_GATED_UP, read once (env_opt_in): 1, ops::gated_projection runs skinny_gated where it applies;
// unset or 0, the gate / up launch and the activation's kernel. The same bits either way (tests/cuda pins it). Not yet
// measured: opt-in until a GPU run has shown the bits and the time.
bool fused_gated_up_enabled();

}  // namespace taco::cuda
