#include "engine/beam_search.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace taco {

double beam_search_score(int64_t num_tokens, double cumulative_logprob, double length_penalty) {
    // vLLM divides by len ** length_penalty; a sequence is never empty there (the prompt has a token).
    return cumulative_logprob / std::pow(double(std::max<int64_t>(num_tokens, 1)), length_penalty);
}

BeamSearchState::BeamSearchState(std::vector<int32_t> prompt_ids, BeamSearchParams params,
                                 std::optional<int32_t> eos_token_id, const Tokenizer* tokenizer)
    : prompt_ids_(std::move(prompt_ids)),
      params_(std::move(params)),
      eos_token_id_(eos_token_id),
      tokenizer_(tokenizer),
      live_(1) {}

int64_t BeamSearchState::num_step_logprobs() const {
    return std::max(2 * params_.beam_width, params_.logprobs.value_or(0));
}

bool BeamSearchState::ends_search(int32_t token) const {
    if (eos_token_id_ && token == *eos_token_id_ && !params_.ignore_eos) return true;
    return std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(), token) !=
           params_.stop_token_ids.end();
}

double BeamSearchState::score(const Beam& beam) const {
    int64_t num_tokens = int64_t(prompt_ids_.size() + beam.token_ids.size());
    const int32_t last = beam.token_ids.empty() ? prompt_ids_.back() : beam.token_ids.back();
    if (eos_token_id_ && last == *eos_token_id_) num_tokens--;  // as vLLM, ignore_eos or not
    return beam_search_score(num_tokens, beam.cumulative_logprob, params_.length_penalty);
}

bool BeamSearchState::check_stop_strings(Beam& beam, size_t previous_text_size) const {
    beam.text = tokenizer_->decode(beam.token_ids, params_.skip_special_tokens);
    size_t first = std::string::npos, length = 0;
    for (const std::string& stop : params_.stop) {
        if (stop.empty()) continue;
        // Only where the new token's text could complete it: earlier matches would have ended the beam before.
        const size_t from = previous_text_size >= stop.size() ? previous_text_size - stop.size() + 1 : 0;
        const size_t at = beam.text.find(stop, std::min(from, beam.text.size()));
        if (at < first) first = at, length = stop.size();
    }
    if (first == std::string::npos) return false;
    beam.stop_reason = beam.text.substr(first, length);
    beam.text.resize(params_.include_stop_str_in_output ? first + length : first);
    beam.finish_reason = FinishReason::kStop;
    return true;
}

void BeamSearchState::advance(std::span<const SampleLogprobs> step) {
    TACO_CHECK_EQ(step.size(), live_.size());
    const size_t num_candidates = size_t(2 * params_.beam_width);
    struct Candidate {
        double cumulative_logprob;
        size_t beam;  // in live_
        size_t rank;  // in step[beam].top
    };
    std::vector<Candidate> candidates;
    auto extend = [&](const Beam& from, const SampleLogprobs& lp, size_t rank, bool keep_token) {
        const TokenLogprob& t = lp.top[rank];
        Beam beam = from;
        beam.cumulative_logprob += t.logprob;
        if (!keep_token) return beam;
        beam.token_ids.push_back(t.token);
        if (params_.logprobs) {
            SampleLogprobs chosen;
            chosen.sampled = t;
            chosen.sampled_rank = int64_t(std::count_if(lp.top.begin(), lp.top.end(),
                                                        [&](const TokenLogprob& o) { return o.logprob >= t.logprob; }));
            chosen.top.assign(lp.top.begin(), lp.top.begin() + std::min<size_t>(lp.top.size(), *params_.logprobs));
            beam.logprobs.push_back(std::move(chosen));
        }
        return beam;
    };
    for (size_t b = 0; b < live_.size(); ++b) {
        const SampleLogprobs& lp = step[b];
        for (size_t rank = 0; rank < std::min(num_candidates, lp.top.size()); ++rank) {
            const int32_t token = lp.top[rank].token;
            if (ends_search(token)) {  // ends here, taking no beam's place (vLLM's EOS)
                Beam ended = extend(live_[b], lp, rank, params_.include_stop_str_in_output);
                ended.finish_reason = FinishReason::kStop;
                ended.stop_token_id = token;
                completed_.push_back(std::move(ended));
                continue;
            }
            candidates.push_back({live_[b].cumulative_logprob + lp.top[rank].logprob, b, rank});
        }
    }
    // Highest cumulative logprob first; ties keep (beam, rank) order, so the search is deterministic.
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.cumulative_logprob > b.cumulative_logprob;
    });
    std::vector<Beam> next;
    for (const Candidate& c : candidates) {
        if (int64_t(next.size()) >= params_.beam_width) break;
        Beam beam = extend(live_[c.beam], step[c.beam], c.rank, /*keep_token=*/true);
        if (!params_.stop.empty() && tokenizer_ && check_stop_strings(beam, live_[c.beam].text.size())) {
            completed_.push_back(std::move(beam));  // a stop string ends it as EOS would
            continue;
        }
        next.push_back(std::move(beam));
    }
    live_ = std::move(next);
    num_steps_++;
}

std::vector<Beam> BeamSearchState::best() const {
    std::vector<Beam> all = completed_;
    all.insert(all.end(), live_.begin(), live_.end());
    std::vector<double> scores;
    for (const Beam& beam : all) scores.push_back(score(beam));
    std::vector<size_t> order(all.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<Beam> out;
    for (size_t i = 0; i < order.size() && int64_t(out.size()) < params_.beam_width; ++i) {
        Beam beam = all[order[i]];
        if (!beam.finish_reason) beam.finish_reason = FinishReason::kLength;
        if (beam.stop_reason.empty()) {  // a stop string's beam has its text cut already
            std::vector<int32_t> shown = beam.token_ids;
            if (beam.stop_token_id && !shown.empty() && shown.back() == *beam.stop_token_id) shown.pop_back();
            beam.text = tokenizer_ ? tokenizer_->decode(shown, params_.skip_special_tokens) : "";
        }
        out.push_back(std::move(beam));
    }
    return out;
}

Result<std::shared_ptr<BeamSearch>> BeamSearch::start(Engine& engine, GenerationInput input, BeamSearchParams params) {
    // The checks of Engine::submit on the prompt, with the search's max_tokens (each probe asks for one token).
    const Tokenizer* tokenizer = engine.tokenizer();
    std::vector<int32_t> ids = std::move(input.prompt_ids);
    if (input.prompt) {
        if (!tokenizer) return error("the model folder has no tokenizer: send token ids instead of text");
        TACO_ASSIGN_OR_RETURN(ids, tokenizer->encode(*input.prompt, /*add_special_tokens=*/true));
    }
    if (ids.empty()) return error("the prompt is empty");
    const int64_t max_len = engine.max_model_len();
    if (const auto& keep = input.params.truncate_prompt_tokens) {
        if (*keep > max_len)
            return error("truncate_prompt_tokens value ({}) is greater than max_model_len ({}); choose a smaller one",
                         *keep, max_len);
        const int64_t num_kept = *keep == -1 ? max_len : *keep;
        if (num_kept > 0 && int64_t(ids.size()) > num_kept) ids.erase(ids.begin(), ids.end() - num_kept);
    }
    // Each step asks for 2 x n top logprobs, which --max-logprobs bounds (as vLLM's probes are refused past it).
    const int64_t max_width = std::min(BeamSearchParams::kMaxBeamWidth, engine.max_logprobs() / 2);
    if (params.beam_width < 1 || params.beam_width > max_width)
        return error(
            "n must be in [1, {}] with use_beam_search (each step asks for 2 x n top logprobs, at most "
            "--max-logprobs {}), got {}",
            max_width, engine.max_logprobs(), params.beam_width);
    if (params.max_tokens < 1) return error("max_tokens must be at least 1, got {}", params.max_tokens);
    if (!params.stop.empty() && !tokenizer)
        return error("stop strings need a tokenizer, and the model folder has none");
    const int64_t prompt_len = int64_t(ids.size());
    if (prompt_len + 1 > max_len)
        return error(
            "the prompt is too long: this model's maximum context length is {} tokens, and the prompt has {} (plus "
            "at least 1 for the completion)",
            max_len, prompt_len);
    if (params.max_tokens > max_len - prompt_len)
        return error(
            "max_tokens is too large: this model's maximum context length is {} tokens, but {} + {} were requested "
            "({} in the prompt, {} for the completion)",
            max_len, prompt_len, params.max_tokens, prompt_len, params.max_tokens);
    std::optional<int32_t> eos = tokenizer ? tokenizer->eos_token_id() : std::nullopt;
    const auto& model_eos = engine.model_config().generation.eos_token_ids;
    if (!eos && !model_eos.empty()) eos = model_eos.front();
    params.priority = input.priority;
    const int64_t priority = params.priority;
    BeamSearchState state(std::move(ids), std::move(params), eos, tokenizer);
    std::shared_ptr<BeamSearch> search(new BeamSearch(engine, std::move(state), priority));
    TACO_RETURN_IF_ERROR(search->submit_step());
    search->stream_ = std::make_shared<OutputStream>(search->probes_.front()->id());
    search->thread_ = std::thread([raw = search.get()] { raw->run(); });
    return search;
}

BeamSearch::BeamSearch(Engine& engine, BeamSearchState state, int64_t priority)
    : engine_(engine), state_(std::move(state)), priority_(priority) {}

BeamSearch::~BeamSearch() {
    cancel();
    if (thread_.joinable()) thread_.join();
}

Status BeamSearch::submit_step() {
    SamplingParams probe;  // greedy, one token: only its logprobs are used
    probe.temperature = 0;
    probe.max_tokens = 1;
    probe.ignore_eos = true;
    probe.logprobs = state_.num_step_logprobs();
    std::lock_guard<std::mutex> lock(mutex_);
    probes_.clear();
    if (cancelled_) return Status::ok();  // run() sees it and ends the stream
    for (const Beam& beam : state_.live()) {
        GenerationInput input;
        input.prompt_ids = state_.prompt_ids();
        input.prompt_ids.insert(input.prompt_ids.end(), beam.token_ids.begin(), beam.token_ids.end());
        input.params = probe;
        input.priority = priority_;
        auto stream = engine_.submit(std::move(input));
        if (!stream) {
            for (const auto& submitted : probes_) engine_.abort(submitted->id());
            probes_.clear();
            return stream.status();
        }
        probes_.push_back(std::move(*stream));
    }
    return Status::ok();
}

void BeamSearch::finish(RequestOutput output) {
    output.id = stream_->id();
    output.finished = true;
    output.queued_at = queued_at_;
    output.first_scheduled_at = first_scheduled_at_;
    stream_->push(std::move(output));
}

void BeamSearch::finish_with_error(std::string message) {
    RequestOutput failed;
    failed.error = std::move(message);
    finish(std::move(failed));
}

void BeamSearch::run() {
    for (bool first_step = true;; first_step = false) {
        std::vector<std::shared_ptr<OutputStream>> probes;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            probes = probes_;
        }
        // Every probe's stream ends (a token, an abort, or the engine's error at shutdown), so these waits do too.
        std::vector<SampleLogprobs> step;
        std::string error;
        for (const auto& probe : probes) {
            std::optional<SampleLogprobs> logprobs;
            while (auto output = probe->next()) {
                if (first_step) {
                    queued_at_ = output->queued_at;
                    if (output->first_scheduled_at) first_scheduled_at_ = output->first_scheduled_at;
                    num_cached_tokens_ = output->num_cached_tokens;
                }
                if (!output->error.empty()) error = output->error;
                for (const SampleOutput& sample : output->samples)
                    if (!sample.logprobs.empty()) logprobs = sample.logprobs.front();
            }
            if (logprobs) step.push_back(std::move(*logprobs));
        }
        bool cancelled = false;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            cancelled = cancelled_;
        }
        if (cancelled) {
            RequestOutput aborted;  // as the engine ends an aborted request: every choice with finish reason "abort"
            for (int64_t i = 0; i < state_.beam_width(); ++i) {
                SampleOutput sample;
                sample.index = i;
                sample.finish_reason = FinishReason::kAbort;
                aborted.samples.push_back(std::move(sample));
            }
            return finish(std::move(aborted));
        }
        if (!error.empty()) return finish_with_error(error);
        if (step.size() != probes.size()) return finish_with_error("a beam's step ended without a token");
        state_.advance(step);
        if (state_.done()) break;
        const Status submitted = submit_step();
        if (!submitted) return finish_with_error(submitted.message());
    }
    RequestOutput output;
    output.prompt_ids = state_.prompt_ids();
    output.num_cached_tokens = num_cached_tokens_;
    int64_t index = 0;
    for (Beam& beam : state_.best()) {
        SampleOutput sample;
        sample.index = index++;
        sample.token_ids = std::move(beam.token_ids);
        sample.text = std::move(beam.text);
        sample.logprobs = std::move(beam.logprobs);
        sample.cumulative_logprob = beam.cumulative_logprob;
        sample.finish_reason = beam.finish_reason;
        sample.stop_reason = std::move(beam.stop_reason);
        // vLLM's stop_reason is the EOS id for a beam that ended at EOS; ours also names a stop token.
        sample.stop_token_id = beam.stop_token_id;
        output.samples.push_back(std::move(sample));
    }
    finish(std::move(output));
}

void BeamSearch::cancel() {
    std::vector<std::shared_ptr<OutputStream>> probes;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cancelled_) return;
        cancelled_ = true;
        probes = probes_;
    }
    for (const auto& probe : probes) engine_.abort(probe->id());  // finished ones are ignored
}

}  // namespace taco
