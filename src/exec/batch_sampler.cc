#include "exec/batch_sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/thread_pool.h"
#include "exec/logit_order.h"
#include "exec/philox.h"
#include "exec/token_filter.h"

namespace taco {

namespace {

constexpr float kMaxLogitBias = 100.0f;  // vLLM clamps logit_bias values into [-100, 100]

bool has_penalties(const SamplingParams& p) {
    return p.repetition_penalty != 1.0 || p.frequency_penalty != 0.0 || p.presence_penalty != 0.0;
}

bool changes_logits(const SamplingRow& row) {
    return !row.suppressed_ids.empty() || !row.params->logit_bias.empty() || has_penalties(*row.params);
}

// The running Gumbel-max of one draw: the token with the largest gumbel_key, lowest id on ties. Tokens are
// ruled out before any logarithm when even the largest noise their random bits can give loses, so only a
// few keys are computed in full; the result is the exact argmax all the same.
class GumbelArgmax {
public:
    GumbelArgmax(const SamplingRow& row, float max_logit, float temperature)
        : seed_(row.seed), draw_index_(row.draw_index), max_logit_(max_logit), temperature_(temperature) {}

    int32_t best() const { return best_token_; }
    // Logits at or below this cannot reach the best key any more, whatever their noise.
    float cutoff() const { return cutoff_; }

    void consider(int32_t token, float logit) {
        const uint32_t group = uint32_t(token) >> 2;
        if (group != group_) {
            block_ = philox::token_group_bits(seed_, draw_index_, group);
            group_ = group;
        }
        const uint32_t bits = block_.w[uint32_t(token) & 3];
        const float scaled = philox::div_rn(philox::sub_rn(logit, max_logit_), temperature_);
        // gumbel_key <= scaled + upper bound (rounding is monotone): out when that is already below the best.
        if (philox::add_rn(scaled, philox::gumbel_upper_bound(bits)) < best_key_) return;
        const float key = gumbel_key(logit, max_logit_, temperature_, philox::gumbel_from_bits(bits));
        if (key > best_key_ || (key == best_key_ && token < best_token_)) {
            best_key_ = key;
            best_token_ = token;
            update_cutoff();
        }
    }

private:
    // Could a token of this logit reach the best key with the largest noise there is?
    bool may_reach(float logit) const {
        const float scaled = philox::div_rn(philox::sub_rn(logit, max_logit_), temperature_);
        return !(philox::add_rn(scaled, philox::kMaxGumbel) < best_key_);
    }

    // A float that cannot reach the best key; the scaled logit is monotone in the logit, so no logit at or
    // below it can. The exact inverse, stepped down past rounding; if a few steps do not do, the old cut-off
    // (for a lower best key) still holds.
    void update_cutoff() {
        float cutoff = float(double(max_logit_) + (double(best_key_) - philox::kMaxGumbel) * temperature_);
        for (int step = 0; step < 8 && may_reach(cutoff); ++step) cutoff = std::nextafter(cutoff, -INFINITY);
        if (!may_reach(cutoff)) cutoff_ = std::max(cutoff_, cutoff);
    }

    uint64_t seed_;
    int64_t draw_index_;
    float max_logit_, temperature_;
    uint32_t group_ = std::numeric_limits<uint32_t>::max();  // token group of block_ (none yet)
    philox::Block block_{};
    float best_key_ = -INFINITY;
    int32_t best_token_ = -1;
    float cutoff_ = -INFINITY;
};

}  // namespace

struct BatchSampler::Scratch {
    std::vector<float> masked;       // [vocab] a row after the grammar mask
    std::vector<float> logits;       // [vocab] a row after suppressed ids, logit_bias and penalties
    std::vector<int32_t> counts;     // [vocab] occurrences in the output; all 0 between draws
    std::vector<uint8_t> in_prompt;  // [vocab] all 0 between draws
    std::vector<int32_t> touched;    // ids with a count or in the prompt
    TokenFilter filter;
};

namespace {

void apply_penalties(std::span<float> logits, const SamplingRow& row, std::vector<int32_t>& counts,
                     std::vector<uint8_t>& in_prompt, std::vector<int32_t>& touched) {
    const SamplingParams& p = *row.params;
    const double repetition = p.repetition_penalty;
    const double frequency = p.frequency_penalty;
    const double presence = p.presence_penalty;
    const bool use_prompt = repetition != 1.0;
    const size_t vocab = logits.size();
    counts.resize(vocab, 0);
    in_prompt.resize(vocab, 0);
    touched.clear();
    for (int32_t id : row.output_ids) {
        if (!valid_token_id(id, vocab)) continue;
        if (counts[size_t(id)]++ == 0) touched.push_back(id);
    }
    if (use_prompt) {
        for (int32_t id : row.prompt_ids) {
            if (!valid_token_id(id, vocab) || in_prompt[size_t(id)]) continue;
            in_prompt[size_t(id)] = 1;
            if (counts[size_t(id)] == 0) touched.push_back(id);
        }
    }
    // Every touched id occurs in the prompt or the output: the repetition penalty applies to all of them.
    for (int32_t id : touched) {
        const size_t i = size_t(id);
        double x = logits[i];
        if (use_prompt) x = x > 0 ? x / repetition : x * repetition;
        const int32_t count = counts[i];
        x -= frequency * count;
        if (count > 0) x -= presence;
        logits[i] = float(x);
        counts[i] = 0;
        in_prompt[i] = 0;
    }
}

// Step 0: tokens the grammar mask leaves out to -inf. A mask that allows nothing is not applied.
void apply_token_mask(std::span<float> logits, std::span<const uint32_t> allowed) {
    const size_t vocab = logits.size();
    TACO_CHECK_MSG(allowed.size() == (vocab + 31) / 32, "token mask of {} words for a vocabulary of {}", allowed.size(),
                   vocab);
    bool any = false;
    for (uint32_t w : allowed) any = any || w != 0;
    if (!any) return;
    for (size_t i = 0; i < vocab; ++i)
        if (!((allowed[i / 32] >> (i % 32)) & 1)) logits[i] = -std::numeric_limits<float>::infinity();
}

void process_in_place(std::span<float> logits, const SamplingRow& row, std::vector<int32_t>& counts,
                      std::vector<uint8_t>& in_prompt, std::vector<int32_t>& touched) {
    const size_t vocab = logits.size();
    for (int32_t id : row.suppressed_ids)
        if (valid_token_id(id, vocab)) logits[size_t(id)] = -std::numeric_limits<float>::infinity();
    for (const auto& [id, bias] : row.params->logit_bias)
        if (valid_token_id(id, vocab)) logits[size_t(id)] += std::clamp(bias, -kMaxLogitBias, kMaxLogitBias);
    if (has_penalties(*row.params)) apply_penalties(logits, row, counts, in_prompt, touched);
}

// A non-greedy draw from processed logits.
int32_t draw_token(std::span<const float> logits, const SamplingRow& row, TokenFilter& filter) {
    const SamplingParams& p = *row.params;
    const int32_t top = argmax_token(logits);
    const float max_logit = logits[size_t(top)];
    // Nothing to draw from (no finite logit), or a +inf logit that outweighs everything: the argmax.
    if (!std::isfinite(order_key(max_logit))) return top;
    const float temperature = float(std::clamp<double>(p.temperature, kMinTemperature, FLT_MAX));
    GumbelArgmax gumbel(row, max_logit, temperature);
    if (TokenFilter::restricts(p, logits.size())) {
        filter.select(p, logits);
        // None allowed (min_p above 1, which validate() rejects): the argmax.
        if (filter.candidates().empty()) return top;
        for (const TokenFilter::Candidate& c : filter.candidates()) gumbel.consider(c.token, logits[size_t(c.token)]);
        return gumbel.best();
    }
    // Every token with a finite logit is allowed. The most likely goes first, so the cut-off rules most of
    // the others out by their logit alone (NaN and -inf fail the test too).
    gumbel.consider(top, max_logit);
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] > gumbel.cutoff()) gumbel.consider(int32_t(i), logits[i]);
    return gumbel.best();
}

}  // namespace

BatchSampler::BatchSampler() = default;
BatchSampler::~BatchSampler() = default;

std::unique_ptr<BatchSampler::Scratch> BatchSampler::acquire_scratch() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_scratch_.empty()) return std::make_unique<Scratch>();
    std::unique_ptr<Scratch> scratch = std::move(free_scratch_.back());
    free_scratch_.pop_back();
    return scratch;
}

void BatchSampler::release_scratch(std::unique_ptr<Scratch> scratch) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_scratch_.push_back(std::move(scratch));
}

void BatchSampler::process_logits(std::span<float> logits, const SamplingRow& row) {
    TACO_CHECK(row.params != nullptr);
    std::vector<int32_t> counts, touched;
    std::vector<uint8_t> in_prompt;
    if (!row.allowed_tokens.empty()) apply_token_mask(logits, row.allowed_tokens);
    process_in_place(logits, row, counts, in_prompt, touched);
}

SampledToken BatchSampler::sample_one(std::span<const float> logits, const SamplingRow& row) {
    std::unique_ptr<Scratch> scratch = acquire_scratch();
    SampledToken out;
    sample_with(logits, row, *scratch, out);
    release_scratch(std::move(scratch));
    return out;
}

void BatchSampler::sample_with(std::span<const float> raw, const SamplingRow& row, Scratch& scratch,
                               SampledToken& out) {
    TACO_CHECK(row.params != nullptr);
    TACO_CHECK(!raw.empty());
    const SamplingParams& p = *row.params;
    // What the logprobs read: the model's logits, after the grammar mask when there is one.
    std::span<const float> source = raw;
    if (!row.allowed_tokens.empty()) {
        scratch.masked.assign(raw.begin(), raw.end());
        apply_token_mask(scratch.masked, row.allowed_tokens);
        source = scratch.masked;
    }
    std::span<const float> logits = source;
    if (changes_logits(row)) {
        scratch.logits.assign(source.begin(), source.end());
        process_in_place(scratch.logits, row, scratch.counts, scratch.in_prompt, scratch.touched);
        logits = scratch.logits;
    }
    out.token = p.greedy() ? argmax_token(logits) : draw_token(logits, row, scratch.filter);
    out.logprobs.reset();
    if (p.logprobs || row.sampled_logprob) out.logprobs = logprobs_of(source, out.token, p.logprobs.value_or(0));
}

void BatchSampler::sample(const TensorView& logits, std::span<const SamplingRow> rows, std::span<SampledToken> out) {
    TACO_CHECK_EQ(rows.size(), out.size());
    if (rows.empty()) return;
    TACO_CHECK_MSG(
        logits.ndim == 2 && logits.dtype == DType::kF32 && logits.device == Device::kCpu && logits.strides[1] == 1,
        "logits must be a [rows, vocab] f32 host tensor with contiguous rows, got {}", logits.shape_string());
    const int64_t num_rows = logits.size(0);
    const size_t vocab = size_t(logits.size(1));
    for (const SamplingRow& row : rows)
        TACO_CHECK_MSG(row.logits_row >= 0 && row.logits_row < num_rows, "logits row {} of {}", row.logits_row,
                       num_rows);
    // A draw costs a few passes over the vocabulary: one per task is grain enough.
    ThreadPool::global().parallel_for(int64_t(rows.size()), 1, [&](int64_t begin, int64_t end) {
        std::unique_ptr<Scratch> scratch = acquire_scratch();
        for (int64_t i = begin; i < end; ++i) {
            const SamplingRow& row = rows[size_t(i)];
            sample_with(std::span<const float>(logits.row<float>(row.logits_row), vocab), row, *scratch,
                        out[size_t(i)]);
        }
        release_scratch(std::move(scratch));
    });
}

}  // namespace taco
