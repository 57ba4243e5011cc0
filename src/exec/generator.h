// Generation of one prompt at a time over the paged decoder: chunked prefill, then decode until a stop
// condition. The continuous-batching engine (issue C) replaces this loop; the forward pass is already batched.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/sampler.h"
#include "exec/sampling_params.h"
#include "model/decoder.h"

namespace taco {

struct GenerateOptions {
    int64_t block_size = 16;
    int64_t prefill_chunk_tokens = 512;  // tokens per prefill step
    int64_t max_model_len = 0;           // 0: derived from the config (derived_max_model_len)
    uint64_t fallback_seed = 0;
};

enum class FinishReason { kLength, kStop, kAbort };
std::string_view finish_reason_name(FinishReason reason);

struct GenerationResult {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> token_ids;  // generated only (a final EOS / stop token included)
    FinishReason finish_reason = FinishReason::kLength;
};

// vLLM's default context length: max_position_embeddings, times the rope factor for linear/dynamic/yarn
// (from original_max_position_embeddings when yarn names it).
int64_t derived_max_model_len(const ModelConfig& config);

// Errors: empty prompt, a token id outside the vocabulary, prompt + max_tokens over max_model_len, bad params.
Result<GenerationResult> generate(Decoder& decoder, const std::vector<int32_t>& prompt_ids,
                                  const SamplingParams& params, const GenerateOptions& options);

}  // namespace taco
