#include "exec/token_filter.h"

#include <algorithm>
#include <cmath>

#include "exec/logit_order.h"

namespace taco {

namespace {

// exp() of anything lower is 0 in double.
constexpr double kMinExponent = -746.0;

}  // namespace

bool TokenFilter::restricts(const SamplingParams& params, size_t vocab) {
    return params.min_p > 0 || (params.top_k > 0 && size_t(params.top_k) < vocab) || params.top_p < 1.0;
}

void TokenFilter::select(const SamplingParams& params, std::span<const float> logits) {
    candidates_.clear();
    const double max_logit = double(taco::max_logit(logits));
    if (!std::isfinite(max_logit)) return;

    // top-k keeps every token tied with the k-th largest (vLLM masks logits < the k-th value). vLLM applies
    // min_p first, but both keep a most-likely prefix, so the order does not change the result.
    const int64_t k = params.top_k;
    const double min_key = k > 0 && size_t(k) < logits.size() ? kth_largest(logits, size_t(k), heap_) : kNegInf;

    // Weights relative to the most likely token after temperature, so min_p compares them directly. Tokens
    // whose weight is 0 in double (or far below min_p) are skipped without an exp.
    const double temperature = std::max(params.temperature, kMinTemperature);
    const double min_scaled = params.min_p > 0 ? std::log(params.min_p) - 1e-6 : kMinExponent;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double key = order_key(logits[i]);
        if (key == kNegInf || key < min_key) continue;
        const double scaled = (key - max_logit) / temperature;
        if (scaled < min_scaled) continue;
        const double weight = std::exp(scaled);
        if (weight > 0 && weight >= params.min_p) candidates_.push_back({weight, int32_t(i)});
    }
    double total = 0;
    for (const Candidate& c : candidates_) total += c.weight;
    if (params.top_p < 1.0 && !candidates_.empty()) keep_nucleus(params.top_p, total);
}

// top-p as vLLM: a token survives while it and everything less likely hold more than 1 - p of the mass,
// i.e. the kept set is the smallest most-likely prefix whose mass reaches p (at least one token). Found by
// quickselect on (weight desc, id asc), a strict order, so no full sort of a flat distribution is needed.
void TokenFilter::keep_nucleus(double top_p, double total) {
    auto more_likely = [](const Candidate& a, const Candidate& b) {
        return a.weight > b.weight || (a.weight == b.weight && a.token < b.token);
    };
    const double target = total - (1.0 - top_p) * total;
    // Tokens lighter than (1 - p) * total / n are out: all of them together (a least-likely suffix) weigh
    // less than 1 - p. This drops the long tail of a peaked distribution before the quickselect.
    const double light = (1.0 - top_p) * total / double(candidates_.size()) * (1 - 1e-9);
    std::erase_if(candidates_, [&](const Candidate& c) { return c.weight < light; });
    auto at = [&](size_t i) { return candidates_.begin() + ptrdiff_t(i); };
    // Invariant: [0, lo) are the lo most likely candidates, of mass `before` < target; the cut is <= hi.
    size_t lo = 0, hi = candidates_.size();
    double before = 0;
    while (hi - lo > 32 && before < target) {
        // Median of three as the pivot.
        Candidate first = candidates_[lo], pivot = candidates_[lo + (hi - lo) / 2], last = candidates_[hi - 1];
        if (more_likely(pivot, first)) std::swap(first, pivot);
        if (more_likely(last, pivot)) {
            std::swap(pivot, last);
            if (more_likely(pivot, first)) std::swap(first, pivot);
        }
        const size_t mid =
            size_t(std::partition(at(lo), at(hi), [&](const Candidate& c) { return more_likely(c, pivot); }) -
                   candidates_.begin());
        double left_mass = 0;
        for (size_t i = lo; i < mid; ++i) left_mass += candidates_[i].weight;
        if (before + left_mass >= target) {
            hi = mid;  // the cut lies among the more likely ones (mid > lo: before < target)
            continue;
        }
        before += left_mass;
        lo = mid;
        // The pivot is the most likely of what remains: it joins the kept prefix.
        std::iter_swap(at(lo),
                       std::find_if(at(lo), at(hi), [&](const Candidate& c) { return c.token == pivot.token; }));
        before += candidates_[lo].weight;
        ++lo;
    }
    std::sort(at(lo), at(hi), more_likely);
    size_t keep = lo;
    while (keep < hi && before < target) before += candidates_[keep++].weight;
    candidates_.resize(keep);
}

std::vector<int32_t> TokenFilter::allowed_tokens(const SamplingParams& params, std::span<const float> logits) {
    std::vector<int32_t> tokens;
    if (restricts(params, logits.size())) {
        TokenFilter filter;
        filter.select(params, logits);
        for (const Candidate& c : filter.candidates()) tokens.push_back(c.token);
        std::sort(tokens.begin(), tokens.end());
    } else if (std::isfinite(max_logit(logits))) {
        for (size_t i = 0; i < logits.size(); ++i)
            if (order_key(logits[i]) > kNegInf) tokens.push_back(int32_t(i));
    }
    return tokens;
}

}  // namespace taco
