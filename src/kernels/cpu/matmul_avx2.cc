// AVX2 matmul: the 16 canonical lanes (kernels/ops.h) of each (x row, weight row) pair live in two ymm
// accumulators, lanes 0-7 and 8-15. The first tree step (l[i] += l[i + 8]) is then the elementwise sum of the
// two registers, and the rest of the tree runs inside one, so results equal canonical_dot_any bit for bit.
// Everything but the entry point sits in an anonymous namespace so no template compiled with AVX2 can be
// picked by the linker for a baseline caller.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {
namespace {

constexpr int kLanes = 16;
// GEMM register tile: 2 x 3 pairs = 12 accumulators + 2 widened weight halves + spare of the 16 ymm.
constexpr int kMaxMr = 2;
constexpr int kMaxNr = 3;
// GEMV (one x row): 4 weight rows in flight, 8 accumulators.
constexpr int kGemvNr = 4;
// Bytes ahead of the current position each weight row is prefetched when the weights stream (small M).
constexpr int64_t kPrefetchBytes = 1024;

template <DType W>
struct Weight;

template <>
struct Weight<DType::kF32> {
    using T = float;
    static __m256 load(const T* p) { return _mm256_loadu_ps(p); }
};

template <>
struct Weight<DType::kBF16> {
    using T = uint16_t;
    static __m256 load(const T* p) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
};

template <>
struct Weight<DType::kF16> {
    using T = uint16_t;
    static __m256 load(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};

// The canonical tree over lanes lo[0..7] ++ hi[0..7]: l[i] += l[i + 8], then + 4, + 2, + 1.
inline float reduce_lanes(__m256 lo, __m256 hi) {
    const __m256 s8 = _mm256_add_ps(lo, hi);
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
    __m256 lo[MR][NR];
    __m256 hi[MR][NR];
    for (int m = 0; m < MR; ++m)
        for (int n = 0; n < NR; ++n) lo[m][n] = hi[m][n] = _mm256_setzero_ps();

    auto step = [&](const float* const* xs, const T* const* ws, int64_t i) {
        for (int n = 0; n < NR; ++n) {
            const __m256 w_lo = Weight<W>::load(ws[n] + i);
            const __m256 w_hi = Weight<W>::load(ws[n] + i + 8);
            for (int m = 0; m < MR; ++m) {
                lo[m][n] = _mm256_fmadd_ps(_mm256_loadu_ps(xs[m] + i), w_lo, lo[m][n]);
                hi[m][n] = _mm256_fmadd_ps(_mm256_loadu_ps(xs[m] + i + 8), w_hi, hi[m][n]);
            }
        }
    };

    // Weights read once (no second M tile reuses them) stream from DRAM: prefetch them ahead.
    const bool stream_weights = a.m <= kMaxMr;
    int64_t i = 0;
    for (; i + kLanes <= k; i += kLanes) {
        if (stream_weights)
            for (int n = 0; n < NR; ++n)
                _mm_prefetch(reinterpret_cast<const char*>(w[n] + i) + kPrefetchBytes, _MM_HINT_T0);
        step(x, w, i);
    }
    // K tail: a zero-padded step, after which lanes past K get their old value back. (Keeping the padded
    // fma(0, 0, lane) would not be exact: a lane that underflowed to -0 would become +0.)
    if (i < k) {
        const int64_t rest = k - i;
        alignas(32) float x_pad[MR][kLanes] = {};
        alignas(32) T w_pad[NR][kLanes] = {};
        const float* xs[MR];
        const T* ws[NR];
        for (int m = 0; m < MR; ++m) {
            std::memcpy(x_pad[m], x[m] + i, size_t(rest) * sizeof(float));
            xs[m] = x_pad[m];
        }
        for (int n = 0; n < NR; ++n) {
            std::memcpy(w_pad[n], w[n] + i, size_t(rest) * sizeof(T));
            ws[n] = w_pad[n];
        }
        __m256 lo_before[MR][NR];
        __m256 hi_before[MR][NR];
        for (int m = 0; m < MR; ++m) {
            for (int n = 0; n < NR; ++n) {
                lo_before[m][n] = lo[m][n];
                hi_before[m][n] = hi[m][n];
            }
        }
        step(xs, ws, 0);
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i num_live = _mm256_set1_epi32(int(rest));
        const __m256 lo_live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(num_live, lane));
        const __m256 hi_live =
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(num_live, _mm256_add_epi32(lane, _mm256_set1_epi32(8))));
        for (int m = 0; m < MR; ++m) {
            for (int n = 0; n < NR; ++n) {
                lo[m][n] = _mm256_blendv_ps(lo_before[m][n], lo[m][n], lo_live);
                hi[m][n] = _mm256_blendv_ps(hi_before[m][n], hi[m][n], hi_live);
            }
        }
    }
    for (int m = 0; m < MR; ++m)
        for (int n = 0; n < NR; ++n) a.y[(m0 + m) * a.n + n0 + n] = reduce_lanes(lo[m][n], hi[m][n]);
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

void matmul_avx2(const MatmulArgs& args) {
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
