#include "engine/request_group.h"

#include <algorithm>

#include "core/check.h"

namespace taco {

namespace {

uint64_t mix_seed(uint64_t a, uint64_t b) {
    uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

}  // namespace

Result<std::vector<std::vector<int32_t>>> bad_words_token_ids(const Tokenizer& tokenizer,
                                                              const std::vector<std::string>& words) {
    std::vector<std::vector<int32_t>> out;
    for (const std::string& word : words) {
        const size_t start = word.find_first_not_of(" \t\n\r\f\v");
        const std::string stripped = start == std::string::npos ? "" : word.substr(start);
        TACO_ASSIGN_OR_RETURN(std::vector<int32_t> plain, tokenizer.encode(stripped, false));
        TACO_ASSIGN_OR_RETURN(std::vector<int32_t> spaced, tokenizer.encode(" " + stripped, false));
        if (plain.empty()) continue;
        if (!spaced.empty() && spaced[0] != plain[0] && spaced.size() == plain.size()) {
            out.push_back(std::move(plain));
            out.push_back(std::move(spaced));
        } else {
            out.push_back(std::move(plain));
        }
    }
    return out;
}

void RequestGroup::bad_word_bans(std::span<const int32_t> output_ids, std::vector<int32_t>& out) const {
    for (const std::vector<int32_t>& word : bad_word_ids_) {
        const size_t prefix = word.size() - 1;
        if (prefix > output_ids.size()) continue;
        if (std::equal(word.begin(), word.begin() + std::ptrdiff_t(prefix), output_ids.end() - std::ptrdiff_t(prefix)))
            out.push_back(word.back());
    }
}

RequestGroup::RequestGroup(RequestId id, std::vector<int32_t> prompt_ids, const SamplingParams& params,
                           const Tokenizer* tokenizer, std::vector<int32_t> eos_token_ids, uint64_t engine_seed,
                           int64_t vocab_size)
    : id_(id),
      params_(params),
      num_samples_(params.best_of.value_or(params.n)),
      engine_seed_(engine_seed),
      min_tokens_suppressed_ids_(params.stop_token_ids),
      stream_(std::make_shared<OutputStream>(id)),
      output_(id, std::move(prompt_ids), params, tokenizer, eos_token_ids, num_samples_) {
    TACO_CHECK_GE(num_samples_, 1);
    if (!params.ignore_eos)
        min_tokens_suppressed_ids_.insert(min_tokens_suppressed_ids_.end(), eos_token_ids.begin(), eos_token_ids.end());
    grammar_end_ids_ = min_tokens_suppressed_ids_;
    if (!params.allowed_token_ids.empty()) {
        std::vector<uint8_t> allowed(size_t(std::max<int64_t>(vocab_size, 0)), 0);
        for (int32_t id : params.allowed_token_ids)
            if (id >= 0 && size_t(id) < allowed.size()) allowed[size_t(id)] = 1;
        for (size_t id = 0; id < allowed.size(); ++id)
            if (!allowed[id]) disallowed_ids_.push_back(int32_t(id));
    }
    samples_.reserve(size_t(num_samples_));
}

std::unique_ptr<Request> RequestGroup::make_request(uint64_t arrival_order) const {
    auto request = std::make_unique<Request>();
    request->id = id_;
    request->arrival_order = arrival_order;
    request->priority = priority_;
    request->token_ids = prompt_ids();
    request->num_prompt_tokens = int64_t(prompt_ids().size());
    request->max_total_tokens = request->num_prompt_tokens + params_.max_tokens;
    // Cached prompt blocks would leave positions without logits (vLLM skips prefix-cache hits likewise).
    request->skip_prefix_cache = output_.wants_prompt_logprobs();
    return request;
}

uint64_t RequestGroup::seed_of(int64_t index) const {
    if (params_.seed) return *params_.seed + uint64_t(index);  // each sample its own stream, reproducibly
    const uint64_t group_seed = mix_seed(engine_seed_, id_);
    return index == 0 ? group_seed : mix_seed(group_seed, uint64_t(index));
}

std::shared_ptr<structured::GrammarMatcher> RequestGroup::new_matcher() const {
    if (!params_.grammar) return nullptr;
    return std::make_shared<structured::GrammarMatcher>(params_.grammar, grammar_end_ids_);
}

SampleState& RequestGroup::start() {
    TACO_CHECK(samples_.empty());
    SampleState& s = samples_.emplace_back();
    s.request_id = id_;
    s.index = 0;
    s.seed = seed_of(0);
    s.matcher = new_matcher();
    s.grammar_waiting = s.matcher && !params_.grammar_after.empty();
    output_.add_sample(0);
    return s;
}

std::vector<std::unique_ptr<Request>> RequestGroup::fork(const Request& parent,
                                                         const std::function<RequestId()>& next_id) {
    TACO_CHECK(!forked_ && samples_.size() == 1);
    TACO_CHECK_EQ(parent.id, id_);
    forked_ = true;
    std::vector<std::unique_ptr<Request>> children;
    for (int64_t i = 1; i < num_samples_; ++i) {
        auto child = std::make_unique<Request>(parent);
        child->id = next_id();
        SampleState& s = samples_.emplace_back();
        s.request_id = child->id;
        s.index = i;
        s.seed = seed_of(i);
        s.matcher = new_matcher();  // the parent has accepted no token yet: forks happen at its first draw
        s.grammar_waiting = s.matcher && !params_.grammar_after.empty();
        output_.add_sample(i);
        children.push_back(std::move(child));
    }
    return children;
}

void RequestGroup::mark_finished(SampleState& sample) {
    TACO_CHECK(!sample.finished);
    sample.finished = true;
    num_finished_++;
}

std::optional<RequestOutput> RequestGroup::take_output() {
    std::optional<RequestOutput> out;
    if (streams_deltas()) {
        out = output_.take_delta(done(), num_cached_tokens_);
    } else if (!done()) {
        output_.drop_pending();
    } else {
        out = output_.final_output(best_samples(), num_cached_tokens_);
    }
    if (out) {
        out->queued_at = queued_at_;
        out->first_scheduled_at = first_scheduled_at_;
    }
    return out;
}

std::vector<SampleOutput> RequestGroup::best_samples() const {
    std::vector<SampleOutput> all;
    for (const SampleState& s : samples_) all.push_back(output_.whole(s.index));
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.cumulative_logprob > b.cumulative_logprob; });
    all.resize(size_t(std::min<int64_t>(params_.n, int64_t(all.size()))));
    for (size_t i = 0; i < all.size(); ++i) all[i].index = int64_t(i);
    return all;
}

}  // namespace taco
