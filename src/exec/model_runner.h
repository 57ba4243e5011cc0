// ModelRunner: turns one scheduling step into a ForwardBatch, runs the decoder over the paged KV cache and
// returns the logits of the sequences that sample. It owns the KV memory of both tiers (device, host) and
// executes the block copies the cache manager asked for. It knows nothing of requests or scheduling.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/decoder.h"

namespace taco {

struct RunnerSequence {
    std::span<const int32_t> token_ids;    // the whole sequence known so far
    int64_t num_computed_tokens = 0;       // tokens whose KV is already in the cache
    int64_t num_new_tokens = 0;            // tokens to compute now
    std::span<const int32_t> block_table;  // physical device blocks, logical order
    bool wants_logits = false;             // logits of the last new token
    // Also the logits of the first num_prompt_logits new tokens (prompt logprobs), before the last token's row;
    // num_prompt_logits + wants_logits <= num_new_tokens, so no row is asked for twice.
    int64_t num_prompt_logits = 0;
    int64_t max_length = 0;  // prompt + max_tokens; picks LongRoPE's factors (0: unknown, the tokens so far)

    int64_t num_logits() const { return num_prompt_logits + (wants_logits ? 1 : 0); }
};

struct KvCopy {
    bool src_host = false;
    int32_t src_block = 0;
    bool dst_host = false;
    int32_t dst_block = 0;
};

class ModelRunner {
public:
    ModelRunner(std::unique_ptr<Decoder> decoder, int64_t num_device_blocks, int64_t num_host_blocks,
                int64_t block_size);

    const ModelConfig& config() const { return decoder_->config(); }
    int64_t block_size() const { return device_kv_.block_size; }

    // Bytes of K and V for one block across all layers (f32 on the CPU backend).
    static int64_t kv_bytes_per_block(const ModelConfig& config, int64_t block_size);

    // Runs the copies in order (device <-> host, device -> device).
    void copy_blocks(std::span<const KvCopy> copies);

    // One forward pass over all sequences; returns logits [sum of num_logits(), vocab]: sequence by sequence, each
    // with its prompt-logit rows first, then its last token's row.
    Tensor execute(std::span<const RunnerSequence> sequences);

    // Raw access for tests (e.g. checking that a host round trip restores the KV exactly).
    const KvCacheTensors& device_kv() const { return device_kv_; }

private:
    std::unique_ptr<Decoder> decoder_;
    KvCacheTensors device_kv_;
    KvCacheTensors host_kv_;
};

}  // namespace taco
