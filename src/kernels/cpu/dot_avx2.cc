#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/dot_internal.h"

namespace taco::cpu {

float dot_f32_avx2(const float* a, const float* b, int64_t k) {
    __m256 lo = _mm256_setzero_ps();  // lanes 0-7
    __m256 hi = _mm256_setzero_ps();  // lanes 8-15
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
    }
    alignas(32) float lanes[16];
    _mm256_store_ps(lanes, lo);
    _mm256_store_ps(lanes + 8, hi);
    for (int64_t j = i; j < k; ++j) lanes[j - i] = std::fma(a[j], b[j], lanes[j - i]);  // hardware FMA here
    __m256 s8 = _mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
}

}  // namespace taco::cpu
