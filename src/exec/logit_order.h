// How samplers order logits: NaN below everything (so no comparison sees a NaN), ties by the lower id. Shared
// by BatchSampler, TokenFilter and logprobs_of.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace taco {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

inline double order_key(float logit) { return std::isnan(logit) ? kNegInf : double(logit); }

inline bool valid_token_id(int32_t id, size_t vocab) { return id >= 0 && size_t(id) < vocab; }

// The largest logit, NaN left out (-inf if none is above). maxps(v, m) is exactly v > m ? v : m, NaN
// included, and a maximum is the same in any order, so four lanes give the scalar loop's result.
inline float max_logit(std::span<const float> logits) {
    const float* data = logits.data();
    const size_t n = logits.size();
    float best = -std::numeric_limits<float>::infinity();
    size_t i = 0;
#if defined(__SSE2__)
    __m128 m0 = _mm_set1_ps(best), m1 = m0;
    for (; i + 8 <= n; i += 8) {
        m0 = _mm_max_ps(_mm_loadu_ps(data + i), m0);
        m1 = _mm_max_ps(_mm_loadu_ps(data + i + 4), m1);
    }
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, _mm_max_ps(m0, m1));
    for (float v : lanes) best = v > best ? v : best;
#endif
    for (; i < n; ++i) best = data[i] > best ? data[i] : best;
    return best;
}

// torch.argmax: the first maximum, so the lowest id on ties; 0 when no logit is above -inf. logits must not
// be empty.
inline int32_t argmax_token(std::span<const float> logits) {
    const float best = max_logit(logits);
    if (best == -std::numeric_limits<float>::infinity()) return 0;
    const float* data = logits.data();
    const size_t n = logits.size();
    size_t i = 0;
#if defined(__SSE2__)
    const __m128 target = _mm_set1_ps(best);
    for (; i + 4 <= n; i += 4)
        if (_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(data + i), target)) != 0) break;
#endif
    while (data[i] != best) ++i;  // best occurs at or after i
    return int32_t(i);
}

// The k-th largest order_key of `logits`, 1 <= k <= size: one pass keeping the k largest in a min-heap
// (`heap` is scratch).
inline double kth_largest(std::span<const float> logits, size_t k, std::vector<double>& heap) {
    heap.clear();
    heap.reserve(k);
    for (float v : logits) {
        const double key = order_key(v);
        if (heap.size() < k) {
            heap.push_back(key);
            std::push_heap(heap.begin(), heap.end(), std::greater<double>());
        } else if (key > heap.front()) {
            std::pop_heap(heap.begin(), heap.end(), std::greater<double>());
            heap.back() = key;
            std::push_heap(heap.begin(), heap.end(), std::greater<double>());
        }
    }
    return heap.front();
}

}  // namespace taco
