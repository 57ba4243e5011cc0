#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/dot_internal.h"

namespace taco::cpu {

float dot_f32_avx512(const float* a, const float* b, int64_t k) {
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= k; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
    if (i < k) {
        // Lanes past k keep their value (an FMA with zeros could turn -0 into +0).
        const __mmask16 mask = __mmask16((1u << (k - i)) - 1);
        acc = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i), _mm512_maskz_loadu_ps(mask, b + i), acc, mask);
    }
    // Tree: l[i] += l[i+8], then +4, +2, +1.
    __m256 s8 =
        _mm256_add_ps(_mm512_castps512_ps256(acc), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
}

}  // namespace taco::cpu
