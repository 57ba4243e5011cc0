#include "engine/output_stream.h"

#include <map>

namespace taco {

void OutputStream::push(RequestOutput output) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return;
        closed_ = output.finished;
        queue_.push_back(std::move(output));
    }
    ready_.notify_all();
}

std::optional<RequestOutput> OutputStream::next() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !queue_.empty() || drained_; });
    if (queue_.empty()) return std::nullopt;
    RequestOutput out = std::move(queue_.front());
    queue_.pop_front();
    if (out.finished) drained_ = true;
    return out;
}

std::optional<RequestOutput> OutputStream::try_next() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty()) return std::nullopt;
    RequestOutput out = std::move(queue_.front());
    queue_.pop_front();
    if (out.finished) drained_ = true;
    return out;
}

RequestOutput OutputStream::wait_final() {
    RequestOutput merged;
    std::map<int64_t, SampleOutput> samples;
    while (auto out = next()) {
        merged.id = out->id;
        if (!out->prompt_ids.empty()) merged.prompt_ids = std::move(out->prompt_ids);  // only the first has it
        merged.num_cached_tokens = out->num_cached_tokens;
        merged.finished = out->finished;
        merged.error = out->error;
        if (!out->prompt_logprobs.empty()) merged.prompt_logprobs = std::move(out->prompt_logprobs);
        for (SampleOutput& delta : out->samples) {
            SampleOutput& s = samples[delta.index];
            s.index = delta.index;
            s.token_ids.insert(s.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
            s.text += delta.text;
            s.logprobs.insert(s.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
            s.cumulative_logprob = delta.cumulative_logprob;
            if (delta.finish_reason) {
                s.finish_reason = delta.finish_reason;
                s.stop_reason = delta.stop_reason;
                s.stop_token_id = delta.stop_token_id;
            }
        }
    }
    for (auto& [index, s] : samples) merged.samples.push_back(std::move(s));
    return merged;
}

}  // namespace taco
