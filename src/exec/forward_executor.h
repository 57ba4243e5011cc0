// ForwardExecutor: runs a Decoder over steps of sequences on one device: the ForwardBatch builder, the activation
// workspace and the logits buffer. The workspace is sized once by a dry run at the largest step (the limits), so a
// warmed-up step allocates nothing and the same step shape gets the same addresses. ModelRunner (the engine's),
// perplexity and the tests all run the decoder through one of these.
#pragma once

#include <cstdint>
#include <span>

#include "core/workspace.h"
#include "exec/forward_batch_builder.h"
#include "kernels/exec_context.h"
#include "model/decoder.h"
#include "model/kv_cache_tensors.h"

namespace taco {

struct ExecutorOptions {
    int64_t max_num_tokens = 8192;    // per step (max_num_batched_tokens)
    int64_t max_num_sequences = 256;  // per step (max_num_seqs)
    int64_t max_model_len = 0;        // positions a sequence can reach; 0: the decoder's default
    int64_t block_size = 16;
};

class ForwardExecutor {
public:
    ForwardExecutor(Decoder& decoder, const ExecutorOptions& options);

    // Sizes the workspace by a dry run over `kv`'s shapes (once; execute() does it on first use).
    void size_workspace(KvCacheTensors& kv);
    // One forward pass; returns logits [sum of num_logits(), vocab] f32, sequence by sequence (each with its
    // prompt-logit rows first, then its last token's row), valid until the next call. pad_tokens_to > the step's
    // tokens adds padding rows (slot -1), as a CUDA graph bucket does; they change no real row.
    TensorView execute(std::span<const RunnerSequence> sequences, KvCacheTensors& kv, int64_t pad_tokens_to = 0);

    const Workspace& workspace() const { return workspace_; }
    const ForwardBatchBuilder& builder() const { return builder_; }
    const ExecContext& context() const { return ctx_; }
    int64_t max_model_len() const { return max_model_len_; }

private:
    Decoder& decoder_;
    int64_t max_model_len_;
    ForwardBatchBuilder builder_;
    Workspace workspace_;
    ExecContext ctx_;
    Tensor logits_;  // [capacity, vocab] f32; grows only for steps with many prompt-logit rows
};

}  // namespace taco
