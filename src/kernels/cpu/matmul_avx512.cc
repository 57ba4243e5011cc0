// AVX-512 matmul: one zmm accumulator per (x row, weight row) pair holds the 16 canonical lanes (kernels/ops.h),
// so lane j sees k = j (mod 16) in increasing k exactly as canonical_dot_any does. Weights are widened in
// registers: bf16 by a word permute into the high halves of f32 lanes, f16 with vcvtph2ps. Everything but
// the entry point sits in an anonymous namespace so no template compiled with AVX-512 can be picked by the
// linker for a baseline or AVX2 caller.
#include <immintrin.h>

#include <array>
#include <utility>

#include "core/check.h"
#include "kernels/cpu/matmul_internal.h"

// GCC 12's intrinsic headers seed some operations with `__m512i __Y = __Y` (_mm512_undefined_*), which
// -Wuninitialized reports once inlined here; the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace taco::cpu {
namespace {

constexpr int kLanes = 16;
// GEMM register tile: 6 x 4 accumulators + 4 widened weight vectors + an x vector = 29 of the 32 zmm. Six x
// rows per widened weight vector keep the widening uops (port 5, shared with FMA) to 1 per 6 FMAs; 4 x 4 measured
// 10-25% slower.
constexpr int kMaxMr = 6;
constexpr int kMaxNr = 4;
// GEMV (one x row): more weight rows in flight, to keep enough memory requests outstanding.
constexpr int kGemvNr = 8;
// Bytes ahead of the current position each weight row is prefetched when the weights stream (small M).
constexpr int64_t kPrefetchBytes = 1024;

template <DType W>
struct Weight;

template <>
struct Weight<DType::kF32> {
    using T = float;
    static __m512 load(const T* p) { return _mm512_loadu_ps(p); }
    static __m512 load_masked(const T* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
};

template <>
struct Weight<DType::kBF16> {
    using T = uint16_t;
    // bf16 word i goes to the high half of f32 lane i and the low half is zeroed, in one vpermw (port 5)
    // where zero-extension plus shift would take two uops.
    static __m512 widen(__m256i bits) {
        const __m512i to_high_halves = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6,
                                                        0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
        return _mm512_castsi512_ps(
            _mm512_maskz_permutexvar_epi16(__mmask32(0xAAAAAAAAu), to_high_halves, _mm512_castsi256_si512(bits)));
    }
    static __m512 load(const T* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load_masked(const T* p, __mmask16 mask) { return widen(_mm256_maskz_loadu_epi16(mask, p)); }
};

template <>
struct Weight<DType::kF16> {
    using T = uint16_t;
    static __m512 load(const T* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load_masked(const T* p, __mmask16 mask) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p)); }
};

// The canonical tree: l[i] += l[i + 8], then + 4, + 2, + 1.
inline float reduce_lanes(__m512 v) {
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <DType W, int MR, int NR>
void tile_kernel(const MatmulArgs& a, int64_t m0, int64_t n0) {
    using T = typename Weight<W>::T;
    const int64_t k = a.k;
    const float* x[MR];
    const T* w[NR];
    for (int m = 0; m < MR; ++m) x[m] = a.x + (m0 + m) * k;
    for (int n = 0; n < NR; ++n) w[n] = static_cast<const T*>(a.w) + (n0 + n) * k;
    __m512 acc[MR][NR];
    for (int m = 0; m < MR; ++m)
        for (int n = 0; n < NR; ++n) acc[m][n] = _mm512_setzero_ps();

    // Weights read once (no second M tile reuses them) stream from DRAM: prefetch them ahead.
    const bool stream_weights = a.m <= kMaxMr;
    int64_t i = 0;
    for (; i + kLanes <= k; i += kLanes) {
        __m512 wv[NR];
        for (int n = 0; n < NR; ++n) {
            if (stream_weights) _mm_prefetch(reinterpret_cast<const char*>(w[n] + i) + kPrefetchBytes, _MM_HINT_T0);
            wv[n] = Weight<W>::load(w[n] + i);
        }
        for (int m = 0; m < MR; ++m) {
            const __m512 xv = _mm512_loadu_ps(x[m] + i);
            for (int n = 0; n < NR; ++n) acc[m][n] = _mm512_fmadd_ps(xv, wv[n], acc[m][n]);
        }
    }
    // K tail: lanes past K keep their value as it is. (Padding with fma(0, 0, lane) would not be exact: a lane
    // that underflowed to -0 would become +0.)
    if (i < k) {
        const __mmask16 mask = __mmask16((1u << (k - i)) - 1);
        __m512 wv[NR];
        for (int n = 0; n < NR; ++n) wv[n] = Weight<W>::load_masked(w[n] + i, mask);
        for (int m = 0; m < MR; ++m) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x[m] + i);
            for (int n = 0; n < NR; ++n) acc[m][n] = _mm512_mask3_fmadd_ps(xv, wv[n], acc[m][n], mask);
        }
    }
    for (int m = 0; m < MR; ++m)
        for (int n = 0; n < NR; ++n) a.y[(m0 + m) * a.n + n0 + n] = reduce_lanes(acc[m][n]);
}

using KernelFn = void (*)(const MatmulArgs&, int64_t, int64_t);

template <DType W, int MR, size_t... N>
constexpr std::array<KernelFn, sizeof...(N)> kernel_row(std::index_sequence<N...>) {
    return {&tile_kernel<W, MR, int(N) + 1>...};
}

template <DType W, size_t... M>
constexpr std::array<std::array<KernelFn, kMaxNr>, sizeof...(M)> kernel_table(std::index_sequence<M...>) {
    return {kernel_row<W, int(M) + 1>(std::make_index_sequence<kMaxNr>())...};
}

template <DType W>
void gemm_tile(const MatmulArgs& a, int64_t m0, int mr, int64_t n0, int nr) {
    static constexpr auto kTable = kernel_table<W>(std::make_index_sequence<kMaxMr>());
    kTable[mr - 1][nr - 1](a, m0, n0);
}

template <DType W>
void gemv_tile(const MatmulArgs& a, int64_t m0, int /*mr*/, int64_t n0, int nr) {
    static constexpr std::array<KernelFn, kGemvNr> kRow = kernel_row<W, 1>(std::make_index_sequence<kGemvNr>());
    kRow[nr - 1](a, m0, n0);
}

template <DType W>
MatmulTiling tiling_for(int64_t m) {
    if (m == 1) return {1, kGemvNr, &gemv_tile<W>};
    return {kMaxMr, kMaxNr, &gemm_tile<W>};
}

}  // namespace

void matmul_avx512(const MatmulArgs& args) {
    switch (args.w_dtype) {
        case DType::kF32: matmul_tiled(args, tiling_for<DType::kF32>(args.m)); return;
        case DType::kF16: matmul_tiled(args, tiling_for<DType::kF16>(args.m)); return;
        case DType::kBF16: matmul_tiled(args, tiling_for<DType::kBF16>(args.m)); return;
        case DType::kI8:
        case DType::kU8:
        case DType::kI32:
        case DType::kI64:
        case DType::kF8E4M3:
        case DType::kF8E5M2: break;
    }
    TACO_CHECK_MSG(false, "matmul weight dtype {}", dtype_name(args.w_dtype));
}

}  // namespace taco::cpu
