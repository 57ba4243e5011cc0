#include "exec/generator.h"

#include <algorithm>

namespace taco {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::kLength: return "length";
        case FinishReason::kStop: return "stop";
        case FinishReason::kAbort: return "abort";
    }
    return "?";
}

int64_t derived_max_model_len(const ModelConfig& config) {
    const RopeConfig& rope = config.rope;
    switch (rope.type) {
        case RopeType::kDefault:
        case RopeType::kLlama3: return config.max_position_embeddings;
        case RopeType::kLinear:
        case RopeType::kDynamic: return int64_t(double(config.max_position_embeddings) * rope.factor);
        case RopeType::kYarn: {
            int64_t base = rope.original_max_position_embeddings > 0 ? rope.original_max_position_embeddings
                                                                      : config.max_position_embeddings;
            return int64_t(double(base) * rope.factor);
        }
    }
    return config.max_position_embeddings;
}

Result<GenerationResult> generate(Decoder& decoder, const std::vector<int32_t>& prompt_ids,
                                  const SamplingParams& params, const GenerateOptions& options) {
    const ModelConfig& config = decoder.config();
    TACO_RETURN_IF_ERROR(params.validate(config.vocab_size));
    if (prompt_ids.empty()) return error("the prompt is empty");
    for (size_t i = 0; i < prompt_ids.size(); ++i) {
        if (prompt_ids[i] < 0 || prompt_ids[i] >= config.vocab_size)
            return error("prompt token {} (at index {}) is outside the vocabulary [0, {})", prompt_ids[i], i,
                         config.vocab_size);
    }
    const int64_t max_model_len = options.max_model_len > 0 ? options.max_model_len : derived_max_model_len(config);
    const int64_t total = int64_t(prompt_ids.size()) + params.max_tokens;
    if (total > max_model_len)
        return error("prompt ({} tokens) + max_tokens ({}) = {} exceeds the model's maximum length {} "
                     "(--max-model-len)",
                     prompt_ids.size(), params.max_tokens, total, max_model_len);

    const int64_t block_size = options.block_size;
    const int64_t num_blocks = (total + block_size - 1) / block_size;
    KvCacheTensors kv = KvCacheTensors::allocate(config, num_blocks, block_size);
    std::vector<int32_t> block_table(static_cast<size_t>(num_blocks));
    for (int64_t b = 0; b < num_blocks; ++b) block_table[size_t(b)] = int32_t(b);

    GenerationResult result;
    result.prompt_ids = prompt_ids;
    std::vector<int32_t> sequence = prompt_ids;
    int64_t num_computed = 0;
    Sampler sampler(params, options.fallback_seed);
    std::vector<int32_t> stop_ids = params.stop_token_ids;
    if (!params.ignore_eos)
        stop_ids.insert(stop_ids.end(), config.generation.eos_token_ids.begin(), config.generation.eos_token_ids.end());

    while (true) {
        // Catch num_computed up to the sequence, a chunk at a time; logits only once the last token is in.
        const int64_t chunk = std::min<int64_t>(int64_t(sequence.size()) - num_computed, options.prefill_chunk_tokens);
        ForwardBatch batch;
        batch.attention.query_start = {0, int32_t(chunk)};
        batch.attention.block_tables = {block_table};
        for (int64_t i = 0; i < chunk; ++i) {
            const int64_t pos = num_computed + i;
            batch.token_ids.push_back(sequence[size_t(pos)]);
            batch.attention.positions.push_back(int32_t(pos));
            batch.slot_mapping.push_back(int64_t(block_table[size_t(pos / block_size)]) * block_size + pos % block_size);
        }
        num_computed += chunk;
        const bool caught_up = num_computed == int64_t(sequence.size());
        if (caught_up) batch.logits_indices = {int32_t(chunk - 1)};
        Tensor logits = decoder.forward(batch, kv);
        if (!caught_up) continue;

        const int64_t num_generated = int64_t(result.token_ids.size());
        std::vector<int32_t> suppressed;
        if (num_generated < params.min_tokens) suppressed = stop_ids;
        const SamplingContext context{prompt_ids, result.token_ids, suppressed};
        const int32_t token =
            sampler.sample(std::span<float>(logits.as<float>(), size_t(config.vocab_size)), context, nullptr);
        result.token_ids.push_back(token);
        sequence.push_back(token);
        if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
            result.finish_reason = FinishReason::kStop;
            break;
        }
        if (int64_t(result.token_ids.size()) >= params.max_tokens) {
            result.finish_reason = FinishReason::kLength;
            break;
        }
    }
    return result;
}

}  // namespace taco
