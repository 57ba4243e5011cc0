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

// NaN logits order below everything, so no comparison sees a NaN.
double order_key(float logit) { return std::isnan(logit) ? -kInf : double(logit); }

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
    double max_logit = -kInf;
    for (float v : logits) max_logit = std::max(max_logit, order_key(v));
    if (max_logit == -kInf) return argmax(logits);  // every token is impossible: nothing to draw from

    // Weights relative to the most likely token after temperature, so min_p compares them directly.
    const double temperature = std::max(params_.temperature, kMinTemperature);
    candidates_.clear();
    for (size_t i = 0; i < logits.size(); ++i) {
        const double key = order_key(logits[i]);
        if (key == -kInf) continue;
        const double weight = std::exp((key - max_logit) / temperature);
        if (weight > 0 && weight >= params_.min_p) candidates_.push_back({weight, int32_t(i)});
    }

    if (candidates_.empty()) return argmax(logits);  // min_p > 1: only validate() prevents it

    // top-k keeps every token tied with the k-th largest (vLLM masks logits < the k-th value).
    const int64_t k = params_.top_k;
    if (k > 0 && size_t(k) < candidates_.size()) {
        weights_.resize(candidates_.size());
        for (size_t i = 0; i < candidates_.size(); ++i) weights_[i] = candidates_[i].weight;
        std::nth_element(weights_.begin(), weights_.begin() + (k - 1), weights_.end(), std::greater<double>());
        const double threshold = weights_[size_t(k - 1)];
        std::erase_if(candidates_, [&](const Candidate& c) { return c.weight < threshold; });
    }

    double total = 0;
    for (const Candidate& c : candidates_) total += c.weight;

    // top-p as vLLM: a token survives while the mass of it and everything less likely exceeds 1 - p, so the
    // kept set is the smallest most-likely prefix reaching p. Sorted lazily: nuclei are usually small.
    if (params_.top_p < 1.0) {
        auto more_likely = [](const Candidate& a, const Candidate& b) {
            return a.weight > b.weight || (a.weight == b.weight && a.token < b.token);
        };
        const double tail_limit = (1.0 - params_.top_p) * total;
        const size_t n = candidates_.size();
        size_t sorted = 0, keep = 0;
        double before = 0;  // mass of the kept prefix
        while (true) {
            if (keep == sorted) {
                if (sorted == n) break;
                const size_t chunk = std::min(n - sorted, std::max<size_t>(256, sorted));
                std::partial_sort(candidates_.begin() + ptrdiff_t(sorted), candidates_.begin() + ptrdiff_t(sorted + chunk),
                                  candidates_.end(), more_likely);
                sorted += chunk;
            }
            if (keep > 0 && !(total - before > tail_limit)) break;
            before += candidates_[keep].weight;
            ++keep;
        }
        candidates_.resize(keep);
        total = before;
    }

    double u = next_uniform() * total;
    for (const Candidate& c : candidates_) {
        u -= c.weight;
        if (u < 0) return c.token;
    }
    return candidates_.back().token;  // u within rounding of total
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
        std::vector<std::pair<double, int32_t>> order(logits.size());
        for (size_t i = 0; i < logits.size(); ++i) order[i] = {order_key(logits[i]), int32_t(i)};
        std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        result.top.reserve(k);
        for (size_t i = 0; i < k; ++i) result.top.push_back({order[i].second, logprob(size_t(order[i].second))});
    }
    return result;
}

}  // namespace taco
