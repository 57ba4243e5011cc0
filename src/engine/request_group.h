// RequestGroup: one submitted request and its fan-out into n (or best_of) samples, on the step thread.
//
// Sample 0 runs under the group's id from admission. When the prompt has been computed, fork() makes samples
// 1..num_samples-1 as copies of sample 0's request: the scheduler shares its KV blocks copy-on-write
// (Scheduler::add_forked), so the prompt is computed once. Each sample has its own seed for the engine's
// BatchSampler: a request seed s gives sample i the seed s + i (reproducible per sample); without one, the engine
// seed mixed with the group id (and i) seeds it.
//
// With n samples (best_of unset or equal to n) every delta is streamed as it comes. With best_of > n nothing is
// streamed: once every sample has ended, the n with the highest cumulative logprob (the raw model logprob; ties
// keep sample order) are sent as one final output, renumbered 0..n-1. The text side (detokenizing, stop rules,
// building outputs) is the group's OutputProcessor.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "engine/output_stream.h"
#include "exec/sampling_params.h"
#include "sched/request.h"
#include "structured/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace taco {

// One of the samples of a group: its request in the scheduler and the seed of its draws.
struct SampleState {
    RequestId request_id = 0;
    int64_t index = 0;
    uint64_t seed = 0;  // SamplingRow::seed of every token this sample draws
    bool finished = false;
    // Structured output (params.grammar): where this sample's tokens are in the grammar; null without one.
    std::shared_ptr<structured::GrammarMatcher> matcher;
    // params.grammar_after not spelled yet: the matcher waits (no mask, no token accepted); `grammar_tail` holds
    // the output's last bytes to find it in.
    bool grammar_waiting = false;
    std::string grammar_tail;
};

// vLLM's bad_words as token-id sequences (SamplingParams::update_from_tokenizer): each word without its leading
// spaces, and once more after one space when that gives a different first token and as many tokens (the word in
// the middle of a text). Words that tokenize to nothing are left out.
Result<std::vector<std::vector<int32_t>>> bad_words_token_ids(const Tokenizer& tokenizer,
                                                              const std::vector<std::string>& words);

class RequestGroup {
public:
    // `tokenizer` (null: token ids only) must outlive the group; `engine_seed` seeds samples without a seed.
    // `vocab_size`: the model's, for the complement of params.allowed_token_ids.
    RequestGroup(RequestId id, std::vector<int32_t> prompt_ids, const SamplingParams& params,
                 const Tokenizer* tokenizer, std::vector<int32_t> eos_token_ids, uint64_t engine_seed,
                 int64_t vocab_size = 0);
    RequestGroup(const RequestGroup&) = delete;
    RequestGroup& operator=(const RequestGroup&) = delete;

    RequestId id() const { return id_; }
    const SamplingParams& params() const { return params_; }
    const std::vector<int32_t>& prompt_ids() const { return output_.prompt_ids(); }
    int64_t num_samples() const { return num_samples_; }  // best_of, else n
    const std::shared_ptr<OutputStream>& stream() const { return stream_; }
    OutputProcessor& output() { return output_; }
    bool streams_deltas() const { return num_samples_ == params_.n; }
    bool forked() const { return forked_; }
    bool done() const { return num_finished_ >= num_samples_; }
    // Reserved to num_samples: never reallocates, so pointers to samples stay valid.
    std::vector<SampleState>& samples() { return samples_; }
    SampleState& sample(size_t index) { return samples_.at(index); }
    // The ids a sample may not draw while it has fewer than min_tokens tokens: the stop token ids, and EOS
    // unless ignore_eos.
    const std::vector<int32_t>& min_tokens_suppressed_ids() const { return min_tokens_suppressed_ids_; }
    // params.allowed_token_ids' complement in [0, vocab): suppressed at every draw (empty without the field).
    const std::vector<int32_t>& disallowed_ids() const { return disallowed_ids_; }
    // The bad_words sequences (bad_words_token_ids) as token ids; set once, before the group runs.
    void set_bad_word_ids(std::vector<std::vector<int32_t>> ids) { bad_word_ids_ = std::move(ids); }
    bool has_bad_words() const { return !bad_word_ids_.empty(); }
    // The step that first schedules the group (its queue time ends there); later calls change nothing.
    void mark_scheduled(std::chrono::steady_clock::time_point now) {
        if (!first_scheduled_at_) first_scheduled_at_ = now;
    }
    // GenerationInput::priority, given to every sample's request.
    void set_priority(int64_t priority) { priority_ = priority; }
    // Appends to `out` the tokens a sample whose output is `output_ids` may not draw next: the last token of each
    // bad-word sequence whose other tokens end the output (vLLM's apply_bad_words; one-token words always).
    void bad_word_bans(std::span<const int32_t> output_ids, std::vector<int32_t>& out) const;

    // Sample 0's request for the scheduler (the prompt, under the group's id).
    std::unique_ptr<Request> make_request(uint64_t arrival_order) const;
    // Starts sample 0, once its request is in the scheduler.
    SampleState& start();
    // Starts samples 1.. as copies of `parent` (sample 0's request, prompt computed); `next_id` gives each its
    // request id. Returns their requests, in sample order, for Scheduler::add_forked.
    std::vector<std::unique_ptr<Request>> fork(const Request& parent, const std::function<RequestId()>& next_id);
    void mark_finished(SampleState& sample);
    // After an abort: the group ends now (samples not forked yet never will be).
    void end_all() { num_finished_ = num_samples_; }

    // The prefix-cache hits of the prompt, as the scheduler last reported them.
    void set_num_cached_tokens(int64_t num_cached_tokens) { num_cached_tokens_ = num_cached_tokens; }
    // What the stream gets now, if anything: the pending delta (n samples) or, once every sample has ended, the
    // best n of best_of.
    std::optional<RequestOutput> take_output();
    // The n whole samples with the highest cumulative logprob, renumbered 0..n-1.
    std::vector<SampleOutput> best_samples() const;
    RequestOutput error_output(std::string error) { return output_.error_output(std::move(error)); }

private:
    uint64_t seed_of(int64_t index) const;
    // A matcher of params.grammar for a new sample (null without a grammar).
    std::shared_ptr<structured::GrammarMatcher> new_matcher() const;

    RequestId id_;
    SamplingParams params_;
    int64_t num_samples_;
    uint64_t engine_seed_;
    std::vector<int32_t> min_tokens_suppressed_ids_;
    std::vector<int32_t> disallowed_ids_;
    std::vector<std::vector<int32_t>> bad_word_ids_;
    int64_t priority_ = 0;
    std::chrono::steady_clock::time_point queued_at_ = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> first_scheduled_at_;
    std::vector<int32_t>
        grammar_end_ids_;  // the tokens that end a grammar's match: stop token ids, EOS unless ignore_eos
    std::shared_ptr<OutputStream> stream_;
    OutputProcessor output_;
    std::vector<SampleState> samples_;
    bool forked_ = false;
    int64_t num_finished_ = 0;
    int64_t num_cached_tokens_ = 0;
};

}  // namespace taco
