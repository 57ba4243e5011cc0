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

namespace taco {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

inline double order_key(float logit) { return std::isnan(logit) ? kNegInf : double(logit); }

inline bool valid_token_id(int32_t id, size_t vocab) { return id >= 0 && size_t(id) < vocab; }

// torch.argmax: the first maximum, so the lowest id on ties. logits must not be empty.
inline int32_t argmax_token(std::span<const float> logits) {
    int32_t best = 0;
    double best_key = order_key(logits[0]);
    for (size_t i = 1; i < logits.size(); ++i) {
        const double key = order_key(logits[i]);
        if (key > best_key) {
            best = int32_t(i);
            best_key = key;
        }
    }
    return best;
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
