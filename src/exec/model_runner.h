// ModelRunner: turns one scheduling step into a ForwardBatch, runs the decoder over the paged KV cache and
// returns the logits of the sequences that sample. It owns the KV memory of both tiers (device, host), the
// executor (batch builder, workspace, logits buffer) and executes the block copies the cache manager asked for.
// It knows nothing of requests or scheduling.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/forward_executor.h"
#include "model/decoder.h"

namespace taco {

struct KvCopy {
    bool src_host = false;
    int32_t src_block = 0;
    bool dst_host = false;
    int32_t dst_block = 0;
};

struct RunnerOptions {
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = 0;
    int64_t block_size = 16;
    int64_t max_num_batched_tokens = 8192;
    int64_t max_num_seqs = 256;
    int64_t max_model_len = 0;  // 0: the model's
};

class ModelRunner {
public:
    ModelRunner(std::unique_ptr<Decoder> decoder, const RunnerOptions& options);

    const ModelConfig& config() const { return decoder_->config(); }
    int64_t block_size() const { return device_kv_.block_size; }

    // Runs the copies in order (device <-> host, device -> device).
    void copy_blocks(std::span<const KvCopy> copies);

    // One forward pass over all sequences; returns logits [sum of num_logits(), vocab]: sequence by sequence, each
    // with its prompt-logit rows first, then its last token's row. Valid until the next call.
    TensorView execute(std::span<const RunnerSequence> sequences);

    // Raw access for tests (e.g. checking that a host round trip restores the KV exactly).
    const KvCacheTensors& device_kv() const { return device_kv_; }
    const ForwardExecutor& executor() const { return *executor_; }

private:
    std::unique_ptr<Decoder> decoder_;
    KvCacheTensors device_kv_;
    KvCacheTensors host_kv_;
    std::unique_ptr<ForwardExecutor> executor_;
};

}  // namespace taco
