#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace taco {

Sampler::Sampler(const SamplingParams& params, uint64_t fallback_seed)
    : params_(params), rng_(params.seed.value_or(fallback_seed)) {}

int32_t Sampler::sample(const float* logits, int64_t vocab, const std::vector<int32_t>& suppressed) {
    auto is_suppressed = [&](int32_t id) {
        return std::find(suppressed.begin(), suppressed.end(), id) != suppressed.end();
    };
    if (params_.greedy()) {
        int32_t best = -1;
        float best_value = -std::numeric_limits<float>::infinity();
        for (int32_t i = 0; i < int32_t(vocab); ++i) {
            if (is_suppressed(i)) continue;
            if (best < 0 || logits[i] > best_value) {
                best = i;
                best_value = logits[i];
            }
        }
        return best;
    }
    // Candidates sorted by logit, highest first (ties: lower id first, so the order is deterministic).
    candidates_.clear();
    for (int32_t i = 0; i < int32_t(vocab); ++i)
        if (!is_suppressed(i)) candidates_.emplace_back(float(double(logits[i]) / params_.temperature), i);
    auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    size_t keep = candidates_.size();
    if (params_.top_k > 0) keep = std::min(keep, size_t(params_.top_k));
    std::partial_sort(candidates_.begin(), candidates_.begin() + ptrdiff_t(keep), candidates_.end(), by_logit);
    candidates_.resize(keep);
    // Softmax over the kept candidates in double, then the smallest prefix whose mass reaches top_p.
    std::vector<double> probs(keep);
    const double max_logit = candidates_.front().first;
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += probs[i] = std::exp(double(candidates_[i].first) - max_logit);
    if (params_.top_p < 1.0) {
        double cumulative = 0;
        size_t cut = keep;
        for (size_t i = 0; i < keep; ++i) {
            cumulative += probs[i] / total;
            if (cumulative >= params_.top_p) {
                cut = i + 1;
                break;
            }
        }
        probs.resize(cut);
        total = 0;
        for (double p : probs) total += p;
    }
    double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < probs.size(); ++i) {
        u -= probs[i];
        if (u < 0) return candidates_[i].second;
    }
    return candidates_[probs.size() - 1].second;
}

}  // namespace taco
