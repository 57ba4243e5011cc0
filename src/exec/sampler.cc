#include "exec/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace taco {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// vLLM raises temperatures in (0, 0.01) to 0.01 (sampling_params.py, _MAX_TEMP) against overflow.
constexpr double kMinTemperature = 1e-2;
constexpr float kMaxLogitBias = 100.0f;  // vLLM clamps logit_bias values into [-100, 100]

// exp() of anything lower is 0 in double.
constexpr double kMinExponent = -746.0;

// NaN logits order below everything, so no comparison sees a NaN.
double order_key(float logit) { return std::isnan(logit) ? -kInf : double(logit); }

// The k-th largest order_key of `logits`, 1 <= k <= size: one pass keeping the k largest in a min-heap.
double kth_largest(std::span<const float> logits, size_t k) {
    std::vector<double> heap;
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

bool valid_id(int32_t id, size_t vocab) { return id >= 0 && size_t(id) < vocab; }

// torch.argmax: the first maximum, so the lowest id on ties.
int32_t argmax(std::span<const float> logits) {
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

}  // namespace

Sampler::Sampler(const SamplingParams& params, uint64_t fallback_seed)
    : params_(params), rng_(params.seed.value_or(fallback_seed)) {}

double Sampler::next_uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::sample(std::span<float> logits, const SamplingContext& context, SampleLogprobs* logprobs) {
    TACO_CHECK(!logits.empty());
    const size_t vocab = logits.size();
    const bool want_logprobs = logprobs != nullptr && params_.logprobs.has_value();
    if (want_logprobs) raw_.assign(logits.begin(), logits.end());

    for (int32_t id : context.suppressed_ids)
        if (valid_id(id, vocab)) logits[size_t(id)] = -std::numeric_limits<float>::infinity();
    for (const auto& [id, bias] : params_.logit_bias)
        if (valid_id(id, vocab)) logits[size_t(id)] += std::clamp(bias, -kMaxLogitBias, kMaxLogitBias);
    apply_penalties(logits, context);

    const int32_t token = params_.greedy() ? argmax(logits) : sample_random(logits);
    if (want_logprobs) *logprobs = logprobs_of(raw_, token, *params_.logprobs);
    return token;
}

void Sampler::apply_penalties(std::span<float> logits, const SamplingContext& context) {
    const double repetition = params_.repetition_penalty;
    const double frequency = params_.frequency_penalty;
    const double presence = params_.presence_penalty;
    const bool use_prompt = repetition != 1.0;
    if (!use_prompt && frequency == 0.0 && presence == 0.0) return;
    const size_t vocab = logits.size();
    counts_.resize(vocab, 0);
    in_prompt_.resize(vocab, 0);
    touched_.clear();
    for (int32_t id : context.output_ids) {
        if (!valid_id(id, vocab)) continue;
        if (counts_[size_t(id)]++ == 0) touched_.push_back(id);
    }
    if (use_prompt) {
        for (int32_t id : context.prompt_ids) {
            if (!valid_id(id, vocab) || in_prompt_[size_t(id)]) continue;
            in_prompt_[size_t(id)] = 1;
            if (counts_[size_t(id)] == 0) touched_.push_back(id);
        }
    }
    // Every touched id occurs in the prompt or the output: the repetition penalty applies to all of them.
    for (int32_t id : touched_) {
        const size_t i = size_t(id);
        double x = logits[i];
        if (use_prompt) x = x > 0 ? x / repetition : x * repetition;
        const int32_t count = counts_[i];
        x -= frequency * count;
        if (count > 0) x -= presence;
        logits[i] = float(x);
        counts_[i] = 0;
        in_prompt_[i] = 0;
    }
}

int32_t Sampler::sample_random(std::span<const float> logits) {
    const double total = select_candidates(logits);
    if (candidates_.empty()) return argmax(logits);  // nothing can be drawn (all -inf, or min_p > 1)
    double u = next_uniform() * total;
    for (const Candidate& c : candidates_) {
        u -= c.weight;
        if (u < 0) return c.token;
    }
    return candidates_.back().token;  // u within rounding of total
}

std::vector<int32_t> Sampler::allowed_tokens(const SamplingParams& params, std::span<const float> logits) {
    Sampler sampler(params, 0);
    sampler.select_candidates(logits);
    std::vector<int32_t> tokens;
    for (const Candidate& c : sampler.candidates_) tokens.push_back(c.token);
    std::sort(tokens.begin(), tokens.end());
    return tokens;
}

double Sampler::select_candidates(std::span<const float> logits) {
    candidates_.clear();
    double max_logit = -kInf;
    for (float v : logits) max_logit = std::max(max_logit, order_key(v));
    if (max_logit == -kInf) return 0;

    // top-k keeps every token tied with the k-th largest (vLLM masks logits < the k-th value). vLLM applies
    // min_p first, but both keep a most-likely prefix, so the order does not change the result.
    const int64_t k = params_.top_k;
    const double min_key = k > 0 && size_t(k) < logits.size() ? kth_largest(logits, size_t(k)) : -kInf;

    // Weights relative to the most likely token after temperature, so min_p compares them directly. Tokens
    // whose weight is 0 in double (or far below min_p) are skipped without an exp.
    const double temperature = std::max(params_.temperature, kMinTemperature);
    const double min_scaled = params_.min_p > 0 ? std::log(params_.min_p) - 1e-6 : kMinExponent;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double key = order_key(logits[i]);
        if (key == -kInf || key < min_key) continue;
        const double scaled = (key - max_logit) / temperature;
        if (scaled < min_scaled) continue;
        const double weight = std::exp(scaled);
        if (weight > 0 && weight >= params_.min_p) candidates_.push_back({weight, int32_t(i)});
    }
    double total = 0;
    for (const Candidate& c : candidates_) total += c.weight;
    if (params_.top_p < 1.0 && !candidates_.empty()) total = keep_nucleus(total);
    return total;
}

// top-p as vLLM: a token survives while it and everything less likely hold more than 1 - p of the mass,
// i.e. the kept set is the smallest most-likely prefix whose mass reaches p (at least one token). Found by
// quickselect on (weight desc, id asc), a strict order, so no full sort of a flat distribution is needed.
double Sampler::keep_nucleus(double total) {
    auto more_likely = [](const Candidate& a, const Candidate& b) {
        return a.weight > b.weight || (a.weight == b.weight && a.token < b.token);
    };
    const double target = total - (1.0 - params_.top_p) * total;
    // Tokens lighter than (1 - p) * total / n are out: all of them together (a least-likely suffix) weigh
    // less than 1 - p. This drops the long tail of a peaked distribution before the quickselect.
    const double light = (1.0 - params_.top_p) * total / double(candidates_.size()) * (1 - 1e-9);
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
    return before;
}

SampleLogprobs Sampler::logprobs_of(std::span<const float> logits, int32_t token, int64_t top_k) {
    TACO_CHECK(valid_id(token, logits.size()));
    double max_logit = -kInf;
    for (float v : logits) max_logit = std::max(max_logit, order_key(v));
    double sum = 0;
    if (max_logit > -kInf)
        for (float v : logits) sum += std::exp(order_key(v) - max_logit);
    // With no finite logit every logprob is -inf.
    const double log_normalizer = max_logit > -kInf ? max_logit + std::log(sum) : kInf;
    auto logprob = [&](size_t i) { return float(order_key(logits[i]) - log_normalizer); };

    SampleLogprobs result;
    result.sampled = {token, logprob(size_t(token))};
    const double token_key = order_key(logits[size_t(token)]);
    for (float v : logits) result.sampled_rank += order_key(v) >= token_key ? 1 : 0;

    const size_t k = size_t(std::clamp<int64_t>(top_k, 0, int64_t(logits.size())));
    if (k > 0) {
        // Everything tied with the k-th largest, then the first k of those by (logit desc, id asc).
        const double threshold = kth_largest(logits, k);
        std::vector<std::pair<double, int32_t>> order;
        for (size_t i = 0; i < logits.size(); ++i)
            if (order_key(logits[i]) >= threshold) order.emplace_back(order_key(logits[i]), int32_t(i));
        std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        result.top.reserve(k);
        for (size_t i = 0; i < k; ++i) result.top.push_back({order[i].second, logprob(size_t(order[i].second))});
    }
    return result;
}

}  // namespace taco
