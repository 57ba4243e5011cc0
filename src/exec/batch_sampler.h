// Samples the next token of every row of a step in one call, each row with its own parameters, in vLLM v1's
// order (vllm/v1/sample/sampler.py):
//   1. logprobs, when asked for, from the raw logits (vLLM's default logprobs_mode "raw_logprobs");
//   0. the grammar mask, when the row has one (structured output): disallowed tokens to -inf before anything
//      else, logprobs included, as vLLM applies its grammar bitmask to the logits before its sampler;
//   2. suppressed ids (EOS / stop ids before min_tokens) to -inf, logit_bias added (clamped to [-100, 100]);
//   3. penalties: repetition over prompt + output tokens (positive logits divided, others multiplied),
//      then frequency (minus count in output) and presence (minus once if in output), in double;
//   4. greedy: argmax, lowest id on ties (torch.argmax), NaN lowest; otherwise the tokens TokenFilter allows
//      (temperature, min_p, top-k, top-p) and a Gumbel-max draw among them: the allowed token with the
//      largest gumbel_key(logit, max logit, temperature, gumbel_noise(seed, draw_index, token)), lowest id on
//      ties. That is a draw from their renormalised softmax, and since the noise depends on nothing but
//      (seed, draw index, token), a seeded request gives the same tokens alone or batched, in any order.
//      philox.h computes the noise and the keys bit for bit the same on a GPU, so a device sampler draws the
//      same token from the same allowed set (TokenFilter works in double with libm's exp: a token exactly on
//      a top-p or min-p edge could fall the other way there).
// Rows are independent and run in parallel on ThreadPool::global(); each thread has its own scratch, kept
// between calls.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "exec/sample_logprobs.h"
#include "exec/sampling_params.h"

namespace taco {

// One draw: which logits row it reads and the state of its sequence. Ids outside [0, vocab) in the spans or
// in params->logit_bias are ignored (SamplingParams::validate() rejects them up front).
struct SamplingRow {
    int64_t logits_row = 0;                  // row of the logits tensor; several draws may share one (n > 1)
    const SamplingParams* params = nullptr;  // must outlive the call
    uint64_t seed = 0;                       // params->seed, or the engine's fallback seed for this sample
    int64_t draw_index = 0;                  // tokens this sequence sampled before (its output length)
    std::span<const int32_t> prompt_ids;
    std::span<const int32_t> output_ids;      // tokens generated so far
    std::span<const int32_t> suppressed_ids;  // EOS / stop ids while fewer than min_tokens exist
    bool sampled_logprob = false;             // the sampled token's raw logprob also when params->logprobs is unset
    // [ceil(vocab / 32)] grammar bitmask: token t may be drawn iff bit t % 32 of word t / 32 is set. Empty: no mask.
    // A row whose mask allows nothing draws from unmasked logits' argmax (callers never send one).
    std::span<const uint32_t> allowed_tokens;
};

struct SampledToken {
    int32_t token = 0;
    // When params->logprobs is set (top: that many entries) or row.sampled_logprob (top empty).
    std::optional<SampleLogprobs> logprobs;
};

class BatchSampler {
public:
    BatchSampler();
    ~BatchSampler();
    BatchSampler(const BatchSampler&) = delete;
    BatchSampler& operator=(const BatchSampler&) = delete;

    // logits: [num_rows, vocab] f32 on the host, rows contiguous; read only (each draw works on its own copy
    // where it changes logits). out[i] receives the draw of rows[i]; out.size() == rows.size().
    void sample(const TensorView& logits, std::span<const SamplingRow> rows, std::span<SampledToken> out);

    // One draw from logits [vocab] (row.logits_row is not used): the same token and logprobs as sample().
    SampledToken sample_one(std::span<const float> logits, const SamplingRow& row);

    // Steps 0, 2 and 3 (grammar mask, suppressed ids, logit_bias, penalties) on logits [vocab] in place, as
    // sample() applies them before drawing. For tests and debugging.
    static void process_logits(std::span<float> logits, const SamplingRow& row);

private:
    struct Scratch;

    // One draw from raw logits [vocab] into `out`, with this thread's scratch.
    static void sample_with(std::span<const float> raw, const SamplingRow& row, Scratch& scratch, SampledToken& out);
    std::unique_ptr<Scratch> acquire_scratch();
    void release_scratch(std::unique_ptr<Scratch> scratch);

    std::mutex mutex_;  // guards free_scratch_
    std::vector<std::unique_ptr<Scratch>> free_scratch_;
};

}  // namespace taco
