#include "exec/sample_logprobs.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "exec/logit_order.h"

namespace taco {

SampleLogprobs logprobs_of(std::span<const float> logits, int32_t token, int64_t top_k) {
    TACO_CHECK(valid_token_id(token, logits.size()));
    const double max_logit = double(taco::max_logit(logits));
    double sum = 0;
    if (max_logit > kNegInf)
        for (float v : logits) sum += std::exp(order_key(v) - max_logit);
    const double log_normalizer = max_logit > kNegInf ? max_logit + std::log(sum) : -kNegInf;
    auto logprob = [&](size_t i) { return float(order_key(logits[i]) - log_normalizer); };

    SampleLogprobs result;
    result.sampled = {token, logprob(size_t(token))};
    const double token_key = order_key(logits[size_t(token)]);
    for (float v : logits) result.sampled_rank += order_key(v) >= token_key ? 1 : 0;

    const size_t k = size_t(std::clamp<int64_t>(top_k, 0, int64_t(logits.size())));
    if (k == 0) return result;
    // Everything tied with the k-th largest, then the first k of those by (logit desc, id asc).
    std::vector<double> heap;
    const double threshold = kth_largest(logits, k, heap);
    std::vector<std::pair<double, int32_t>> order;
    for (size_t i = 0; i < logits.size(); ++i)
        if (order_key(logits[i]) >= threshold) order.emplace_back(order_key(logits[i]), int32_t(i));
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    result.top.reserve(k);
    for (size_t i = 0; i < k; ++i) result.top.push_back({order[i].second, logprob(size_t(order[i].second))});
    return result;
}

}  // namespace taco
