// OutputProcessor: the output side of one request (all of its n or best_of samples), on the step thread.
//
// Per sample, each sampled token goes through the incremental detokenizer and the StopChecker and is checked
// against the stop token ids, EOS and the length limits, with vLLM's rules: a stop string wins over a stop
// token, which wins over length; stop strings count only once more than min_tokens tokens exist; EOS does not
// stop with ignore_eos. The token, the text now safe to show and its logprobs become that sample's part of the
// pending delta; on the token that ends the sample the delta also carries the finish reason (and the text held
// back so far, unless a stop string cut it). Every delta is added to the whole sample too.
//
// Outputs: take_delta() turns the pending delta into the RequestOutput a stream shows (n samples, streamed);
// final_output() builds the one output of a best_of request from the samples its RequestGroup chose. The prompt
// travels once: only the first output of a request carries prompt_ids (OutputStream::wait_final keeps it), so
// a streamed delta costs its new tokens, not the prompt again. Prompt logprobs travel once too, with the first
// output after the whole prompt has been computed (and in a best_of final output).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request_output.h"
#include "engine/stop_checker.h"
#include "exec/sampling_params.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace taco {

class OutputProcessor {
public:
    // `tokenizer` (null: no text, token ids only) must outlive this object.
    OutputProcessor(RequestId id, std::vector<int32_t> prompt_ids, const SamplingParams& params,
                    const Tokenizer* tokenizer, std::vector<int32_t> eos_token_ids, int64_t num_samples);

    const std::vector<int32_t>& prompt_ids() const { return prompt_ids_; }

    // Starts sample `index` (0 when the request is admitted, 1.. when it forks): indices come in order.
    void add_sample(int64_t index);
    const std::vector<int32_t>& output_ids(int64_t index) const { return sample(index).output_ids; }
    // Everything emitted for sample `index` so far.
    const SampleOutput& whole(int64_t index) const { return sample(index).whole; }

    // Appends a sampled token to sample `index` and returns its finish reason, if it ends the sample: push_token()
    // and flush_text() at once. `token_logprob` adds to its cumulative logprob; `at_max_model_len`: the sequence has
    // reached the context limit with it; grammar_complete: the structured-output grammar has matched completely
    // with this token (finish reason "stop", after stop strings and tokens, before length).
    std::optional<FinishReason> append_token(int64_t index, int32_t token, const SampleLogprobs* logprobs,
                                             double token_logprob, bool at_max_model_len,
                                             bool grammar_complete = false);

    // The two stages of append_token, so that the engine can detokenize one step's tokens while the device computes
    // the next step (EngineConfig::async_scheduling). The token stage: the token joins output_ids (which the next
    // step's sampling reads) and gives what the token alone decides: a stop token, EOS or grammar_complete
    // ("stop"), else the length limits ("length"). Its text, logprobs and output wait in a queue.
    std::optional<FinishReason> push_token(int64_t index, int32_t token, std::optional<SampleLogprobs> logprobs,
                                           double token_logprob, bool at_max_model_len, bool grammar_complete = false);
    // The text stage: every queued token, in order, through the detokenizer and the stop strings into the pending
    // delta. Returns the samples a stop string ended in this call (whether or not their token had ended them too:
    // the reason is "stop" either way); tokens queued after a stop string are dropped.
    std::vector<int64_t> flush_text();
    // Ends sample `index` without a token (abort; max_tokens 0), after its queued tokens' text. Held-back text is
    // dropped, as vLLM does. False (nothing recorded) when the sample had ended already (a stop string among them).
    bool finish(int64_t index, FinishReason reason);

    bool wants_prompt_logprobs() const { return params_.prompt_logprobs.has_value(); }
    // Every prompt token after the first has its logprobs.
    bool prompt_logprobs_done() const { return prompt_logprobs_.size() + 1 >= prompt_ids_.size(); }
    // Position p's raw logits [vocab] score prompt token p + 1. Positions come in order; one seen already (a row
    // recomputed after a preemption) is skipped.
    void add_prompt_logprobs(int64_t position, std::span<const float> logits);

    // The pending delta as a streamed output: nullopt when it holds no sample and the request is not finished.
    std::optional<RequestOutput> take_delta(bool finished, int64_t num_cached_tokens);
    // The final output of a best_of request, from the chosen whole samples; drops the pending delta.
    RequestOutput final_output(std::vector<SampleOutput> samples, int64_t num_cached_tokens);
    // A request that streams nothing (best_of) keeps only the whole samples.
    void drop_pending() { pending_.clear(); }
    // A final output that reports an error.
    RequestOutput error_output(std::string error);

private:
    // A token past the token stage, waiting for its text (push_token -> flush_text).
    struct QueuedToken {
        int32_t token;
        std::optional<SampleLogprobs> logprobs;  // shown in the output
        double cumulative_logprob;               // with this token
        bool ends_here;                          // an EOS or stop token left out of the text
        bool can_stop;                           // past min_tokens: a stop string may end the sample here
        std::optional<FinishReason> reason;      // what the token alone decided
        std::optional<int32_t> stop_token_id;    // the stop token (not EOS) that ended the sample
    };
    struct SampleText {                                       // one sample's detokenizer and stop-string state
        std::unique_ptr<IncrementalDetokenizer> detokenizer;  // null without a tokenizer
        std::unique_ptr<StopChecker> stop_checker;
        std::vector<int32_t> output_ids;
        double cumulative_logprob = 0;
        std::vector<QueuedToken> queued;  // tokens whose text is not yet made
        SampleOutput whole;
    };

    const SampleText& sample(int64_t index) const;
    SampleText& sample(int64_t index);
    // flush_text() of one sample: true when a stop string ended it.
    bool flush_sample_text(SampleText& s);
    // Adds `delta` to the pending delta and to the whole sample.
    void record(SampleOutput delta);
    // The fields every output carries; the prompt only in the first one.
    RequestOutput new_output(int64_t num_cached_tokens);

    RequestId id_;
    std::vector<int32_t> prompt_ids_;
    SamplingParams params_;
    const Tokenizer* tokenizer_;
    std::vector<int32_t> eos_token_ids_;
    std::vector<SampleText> samples_;  // by sample index
    std::vector<SampleOutput> pending_;
    std::vector<SampleLogprobs> prompt_logprobs_;  // of prompt tokens 1.., filled as the prompt is computed
    bool prompt_sent_ = false;
    bool prompt_logprobs_sent_ = false;
};

}  // namespace taco
