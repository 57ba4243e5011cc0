// Beam search as vLLM's OpenAI server runs it (use_beam_search; vllm/entrypoints/openai/engine/serving.py
// beam_search and vllm/beam_search.py), as a client of the Engine: no step of the engine knows about beams.
//
// Each step asks the engine for one token of every live beam (a request of max_tokens 1 on the prompt plus the
// beam's tokens, with its top 2 x beam_width raw logprobs; the prefix cache serves all but the last block of it, so
// a beam is not prefilled again), turns each beam's 2 x beam_width tokens into candidates scored by cumulative
// logprob, moves the candidates that end (EOS unless ignore_eos; also our stop tokens and strings, below) to the
// completed list, and keeps the beam_width best of the rest. After max_tokens steps, or once no beam is live, the
// completed and live beams are ranked by vLLM's length-penalised score (get_beam_search_score)
//     cumulative_logprob / len(prompt + output) ^ length_penalty     (an output ending in EOS counts one less)
// and the best beam_width are the choices, best first: finish reason "stop" (stop_reason the EOS id) or "length".
// Like vLLM there is no early stopping: the search runs max_tokens steps unless every beam has ended.
//
// Where we differ, on purpose: vLLM ignores stop strings and stop_token_ids under beam search; here a candidate
// whose token is a stop token ends as EOS does, and one whose text now holds a stop string ends there (text cut
// before it, or after it with include_stop_str_in_output; stop_reason the string). vLLM adds the token its probe
// request drew (at temperature 1 by default) to the candidates when it is outside the top 2 x beam_width, which
// makes its search random; here the probes are greedy, so the candidates are exactly the top 2 x beam_width and the
// search is deterministic. Temperature changes nothing else in either: the candidates' logprobs are the raw ones.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace taco {

struct BeamSearchParams {
    int64_t beam_width = 1;  // the request's n: beams kept per step, and choices returned
    int64_t max_tokens = 16;
    bool ignore_eos = false;
    double length_penalty = 1.0;
    bool include_stop_str_in_output = false;
    std::vector<std::string> stop;  // stop strings (vLLM ignores them under beam search)
    std::vector<int32_t> stop_token_ids;
    bool skip_special_tokens = true;  // for the choices' text
    std::optional<int64_t> logprobs;  // top logprobs per returned token, as SamplingParams::logprobs
    int64_t priority = 0;             // of every probe request

    // Each probe asks for 2 x beam_width top logprobs, which vLLM's --max-logprobs (20) bounds: past 10 vLLM's
    // engine refuses the probes, here the request is refused up front.
    static constexpr int64_t kMaxBeamWidth = SamplingParams::kMaxLogprobs / 2;
};

// vLLM's get_beam_search_score: `num_tokens` counts prompt and output, less one when the sequence ends with EOS.
double beam_search_score(int64_t num_tokens, double cumulative_logprob, double length_penalty);

// One hypothesis of the search.
struct Beam {
    std::vector<int32_t> token_ids;             // generated tokens (an ending EOS or stop token only when included)
    double cumulative_logprob = 0;              // of every token drawn, an ending EOS or stop token included
    std::vector<SampleLogprobs> logprobs;       // per token of token_ids, when params.logprobs is set
    std::string text;                           // kept up to date only when there are stop strings
    std::optional<FinishReason> finish_reason;  // set once the beam has ended (kStop); kLength at the end
    std::string stop_reason;                    // the stop string that ended it
    std::optional<int32_t> stop_token_id;       // the EOS or stop token that ended it
};

// The search itself, on logprobs handed to it: no engine, so tests drive it with any numbers.
class BeamSearchState {
public:
    // `eos_token_id`: the tokenizer's EOS (vLLM's tokenizer.eos_token_id); nullopt: none. `tokenizer` (may be null
    // when there are no stop strings) decodes the choices.
    BeamSearchState(std::vector<int32_t> prompt_ids, BeamSearchParams params, std::optional<int32_t> eos_token_id,
                    const Tokenizer* tokenizer);

    const std::vector<int32_t>& prompt_ids() const { return prompt_ids_; }
    const std::vector<Beam>& live() const { return live_; }
    int64_t beam_width() const { return params_.beam_width; }
    // True once max_tokens steps ran or no beam is live.
    bool done() const { return num_steps_ >= params_.max_tokens || live_.empty(); }
    // How many top logprobs a step needs per beam: 2 x beam_width candidates, and what the choices report.
    int64_t num_step_logprobs() const;
    // One step: `step[i]` holds live()[i]'s next-token logprobs with at least 2 x beam_width top entries, highest
    // first (SampleLogprobs::top).
    void advance(std::span<const SampleLogprobs> step);
    // The beam_width best beams by score, best first (ties keep completion order), each with its text and finish
    // reason. Call once done().
    std::vector<Beam> best() const;

private:
    bool ends_search(int32_t token) const;
    double score(const Beam& beam) const;
    // The beam's text after its new token; true (and the text cut, the beam ended) when it now holds a stop string.
    bool check_stop_strings(Beam& beam, size_t previous_text_size) const;

    std::vector<int32_t> prompt_ids_;
    BeamSearchParams params_;
    std::optional<int32_t> eos_token_id_;
    const Tokenizer* tokenizer_;
    std::vector<Beam> live_;
    std::vector<Beam> completed_;
    int64_t num_steps_ = 0;
};

// The search run on an Engine by a thread of its own, which waits on the probes (so a step follows the last probe of
// the one before at once, whoever polls the stream). Its stream yields one final RequestOutput with the beam_width
// choices, or an error, as a request's stream would.
class BeamSearch {
public:
    // Tokenizes and checks the input as Engine::submit does (the same errors, naming the field), submits the first
    // probe and starts the thread. input.params' sampling fields are not used: `params` says what the search does.
    static Result<std::shared_ptr<BeamSearch>> start(Engine& engine, GenerationInput input, BeamSearchParams params);
    // Cancels the search and waits for its thread.
    ~BeamSearch();
    BeamSearch(const BeamSearch&) = delete;
    BeamSearch& operator=(const BeamSearch&) = delete;

    const std::shared_ptr<OutputStream>& stream() const { return stream_; }
    // Aborts the probes in flight; unless the search ended already, the stream ends as the engine ends an aborted
    // request (every choice with finish reason "abort"). Any thread.
    void cancel();

private:
    BeamSearch(Engine& engine, BeamSearchState state, int64_t priority);
    // Submits a probe per live beam (none once cancelled).
    Status submit_step();
    void run();  // the thread: the steps, then the final output
    void finish(RequestOutput output);
    void finish_with_error(std::string message);

    Engine& engine_;
    BeamSearchState state_;  // the thread's alone once it runs
    int64_t priority_ = 0;
    std::shared_ptr<OutputStream> stream_;
    int64_t num_cached_tokens_ = 0;  // the first probe's prompt tokens from the prefix cache
    std::chrono::steady_clock::time_point queued_at_;
    std::optional<std::chrono::steady_clock::time_point> first_scheduled_at_;

    std::mutex mutex_;                                   // guards probes_ and cancelled_
    std::vector<std::shared_ptr<OutputStream>> probes_;  // the current step's, one per live beam
    bool cancelled_ = false;
    std::thread thread_;
};

}  // namespace taco
