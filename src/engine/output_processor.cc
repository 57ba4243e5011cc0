#include "engine/output_processor.h"

#include <algorithm>

#include "core/check.h"
#include "exec/sample_logprobs.h"

namespace taco {

OutputProcessor::OutputProcessor(RequestId id, std::vector<int32_t> prompt_ids, const SamplingParams& params,
                                 const Tokenizer* tokenizer, std::vector<int32_t> eos_token_ids, int64_t num_samples)
    : id_(id),
      prompt_ids_(std::move(prompt_ids)),
      params_(params),
      tokenizer_(tokenizer),
      eos_token_ids_(std::move(eos_token_ids)) {
    samples_.reserve(size_t(num_samples));
}

void OutputProcessor::add_sample(int64_t index) {
    TACO_CHECK_EQ(index, int64_t(samples_.size()));
    SampleText& s = samples_.emplace_back();
    if (tokenizer_)
        s.detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer_, prompt_ids_, params_.skip_special_tokens);
    s.stop_checker = std::make_unique<StopChecker>(params_.stop, params_.include_stop_str_in_output);
    s.whole.index = index;
}

const OutputProcessor::SampleText& OutputProcessor::sample(int64_t index) const {
    TACO_CHECK(index >= 0 && index < int64_t(samples_.size()));
    return samples_[size_t(index)];
}

OutputProcessor::SampleText& OutputProcessor::sample(int64_t index) {
    TACO_CHECK(index >= 0 && index < int64_t(samples_.size()));
    return samples_[size_t(index)];
}

std::optional<FinishReason> OutputProcessor::append_token(int64_t index, int32_t token, const SampleLogprobs* logprobs,
                                                          double token_logprob, bool at_max_model_len,
                                                          bool grammar_complete) {
    std::optional<FinishReason> reason =
        push_token(index, token, logprobs ? std::optional<SampleLogprobs>(*logprobs) : std::nullopt, token_logprob,
                   at_max_model_len, grammar_complete);
    if (flush_sample_text(sample(index))) return FinishReason::kStop;
    return reason;
}

std::optional<FinishReason> OutputProcessor::push_token(int64_t index, int32_t token,
                                                        std::optional<SampleLogprobs> logprobs, double token_logprob,
                                                        bool at_max_model_len, bool grammar_complete) {
    SampleText& s = sample(index);
    s.output_ids.push_back(token);
    s.cumulative_logprob += token_logprob;
    const SamplingParams& p = params_;
    const bool is_stop_token =
        std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end();
    const bool is_eos =
        !p.ignore_eos && std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
    QueuedToken& q = s.queued.emplace_back();
    q.token = token;
    q.logprobs = std::move(logprobs);
    q.cumulative_logprob = s.cumulative_logprob;
    // As vLLM's detokenizer: the EOS or stop token that ends the sample is not part of its text (unless
    // include_stop_str_in_output), which matters when skip_special_tokens is false.
    q.ends_here = (is_stop_token || is_eos) && !p.include_stop_str_in_output;
    // As vLLM: stop strings count only once more than min_tokens tokens exist.
    q.can_stop = int64_t(s.output_ids.size()) > p.min_tokens;
    if (is_stop_token || is_eos || grammar_complete) {
        q.reason = FinishReason::kStop;
        if (is_stop_token && !is_eos) q.stop_token_id = token;
    } else if (int64_t(s.output_ids.size()) >= p.max_tokens || at_max_model_len) {
        q.reason = FinishReason::kLength;
    }
    return q.reason;
}

std::vector<int64_t> OutputProcessor::flush_text() {
    std::vector<int64_t> stopped;
    for (SampleText& s : samples_)
        if (flush_sample_text(s)) stopped.push_back(s.whole.index);
    return stopped;
}

bool OutputProcessor::flush_sample_text(SampleText& s) {
    bool stopped_now = false;
    for (QueuedToken& q : s.queued) {
        if (s.stop_checker->stopped()) break;  // a stop string ended the sample: what came after is not output
        SampleOutput out;
        out.index = s.whole.index;
        out.token_ids = {q.token};
        if (q.logprobs) out.logprobs.push_back(std::move(*q.logprobs));
        std::string piece = s.detokenizer && !q.ends_here ? s.detokenizer->push(q.token) : std::string();
        StopChecker::Step step = s.stop_checker->push(piece, q.can_stop);
        out.text = std::move(step.text);
        std::optional<FinishReason> reason = q.reason;
        if (step.stopped) {
            // A stop string wins over a stop token, which wins over length.
            reason = FinishReason::kStop;
            out.stop_reason = s.stop_checker->stop_strings()[size_t(step.stop_index)];
            stopped_now = true;
        } else if (reason) {
            out.stop_token_id = q.stop_token_id;
            // Release what the detokenizer and the stop checker held back.
            std::string tail = s.detokenizer ? s.detokenizer->flush() : std::string();
            StopChecker::Step last = s.stop_checker->push(tail, q.can_stop);
            out.text += last.text;
            if (!last.stopped) out.text += s.stop_checker->flush();
        }
        out.cumulative_logprob = q.cumulative_logprob;
        out.finish_reason = reason;
        record(std::move(out));
    }
    s.queued.clear();
    return stopped_now;
}

bool OutputProcessor::finish(int64_t index, FinishReason reason) {
    SampleText& s = sample(index);
    flush_sample_text(s);
    if (s.whole.finish_reason) return false;
    SampleOutput out;
    out.index = index;
    out.cumulative_logprob = s.cumulative_logprob;
    out.finish_reason = reason;
    record(std::move(out));
    return true;
}

void OutputProcessor::record(SampleOutput delta) {
    SampleOutput& whole = sample(delta.index).whole;
    whole.token_ids.insert(whole.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
    whole.text += delta.text;
    whole.logprobs.insert(whole.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
    whole.cumulative_logprob = delta.cumulative_logprob;
    if (delta.finish_reason) {
        whole.finish_reason = delta.finish_reason;
        whole.stop_reason = delta.stop_reason;
        whole.stop_token_id = delta.stop_token_id;
    }
    pending_.push_back(std::move(delta));
}

void OutputProcessor::add_prompt_logprobs(int64_t position, std::span<const float> logits) {
    TACO_CHECK(wants_prompt_logprobs());
    if (position != int64_t(prompt_logprobs_.size())) return;
    TACO_CHECK_LT(position + 1, int64_t(prompt_ids_.size()));
    prompt_logprobs_.push_back(logprobs_of(logits, prompt_ids_[size_t(position + 1)], *params_.prompt_logprobs));
}

RequestOutput OutputProcessor::new_output(int64_t num_cached_tokens) {
    RequestOutput out;
    out.id = id_;
    if (!prompt_sent_) {
        out.prompt_ids = prompt_ids_;
        prompt_sent_ = true;
    }
    out.num_cached_tokens = num_cached_tokens;
    return out;
}

std::optional<RequestOutput> OutputProcessor::take_delta(bool finished, int64_t num_cached_tokens) {
    if (pending_.empty() && !finished) return std::nullopt;
    RequestOutput out = new_output(num_cached_tokens);
    // Sent once, with the first output after the whole prompt has been computed.
    if (wants_prompt_logprobs() && !prompt_logprobs_sent_ && prompt_logprobs_done() && !pending_.empty()) {
        out.prompt_logprobs = prompt_logprobs_;
        prompt_logprobs_sent_ = true;
    }
    out.samples = std::move(pending_);
    pending_.clear();
    out.finished = finished;
    return out;
}

RequestOutput OutputProcessor::final_output(std::vector<SampleOutput> samples, int64_t num_cached_tokens) {
    pending_.clear();
    RequestOutput out = new_output(num_cached_tokens);
    out.samples = std::move(samples);
    out.finished = true;
    if (wants_prompt_logprobs() && prompt_logprobs_done()) out.prompt_logprobs = prompt_logprobs_;
    return out;
}

RequestOutput OutputProcessor::error_output(std::string error) {
    pending_.clear();
    RequestOutput out = new_output(0);
    out.finished = true;
    out.error = std::move(error);
    return out;
}

}  // namespace taco
