#include "exec/forward_executor.h"

#include <algorithm>

#include "core/check.h"

namespace taco {
namespace {

int64_t model_len(const Decoder& decoder, int64_t requested) {
    const int64_t len = requested > 0 ? requested : decoder.config().max_position_embeddings;
    return std::max<int64_t>(1, std::min(len, decoder.max_positions()));
}

BatchLimits limits_of(const ExecutorOptions& o, int64_t max_model_len) {
    BatchLimits l;
    l.max_num_tokens = o.max_num_tokens;
    l.max_num_sequences = o.max_num_sequences;
    // Prompt-logprob rows are bounded by the step's tokens; the head runs them in chunks of max_num_sequences.
    l.max_num_logits = std::max(o.max_num_tokens, o.max_num_sequences);
    l.max_blocks_per_seq = (max_model_len + o.block_size - 1) / o.block_size;
    return l;
}

// Prepares the decoder for this executor's positions and head chunk (f32 activations: the CPU backend).
RotaryLayout prepared_rotary_layout(Decoder& decoder, int64_t max_model_len, int64_t head_rows) {
    decoder.prepare(DecoderRunOptions{max_model_len, std::max<int64_t>(head_rows, 256), DType::kF32});
    return decoder.rotary_layout();
}

}  // namespace

ForwardExecutor::ForwardExecutor(Decoder& decoder, const ExecutorOptions& options)
    : decoder_(decoder),
      max_model_len_(model_len(decoder, options.max_model_len)),
      builder_(limits_of(options, max_model_len_), options.block_size,
               prepared_rotary_layout(decoder, max_model_len_, options.max_num_sequences)),
      workspace_(MemoryKind::kHost) {
    ctx_.device = Device::kCpu;
    ctx_.scratch = &workspace_;
    logits_ = Tensor::empty({options.max_num_sequences, decoder.config().vocab_size}, DType::kF32);
}

void ForwardExecutor::size_workspace(KvCacheTensors& kv) {
    if (workspace_.sized()) return;
    const BatchLimits& l = builder_.limits();
    const ForwardBatch& shape = builder_.build_shape(l.max_num_tokens, l.max_num_sequences, l.max_num_logits);
    ExecContext dry = ctx_;
    dry.dry_run = true;
    TensorView logits(nullptr, DType::kF32, {l.max_num_logits, decoder_.config().vocab_size});
    workspace_.reset();
    decoder_.forward(dry, shape, kv, workspace_, logits);
    workspace_.reserve(workspace_.high_water_bytes());
}

TensorView ForwardExecutor::execute(std::span<const RunnerSequence> sequences, KvCacheTensors& kv,
                                    int64_t pad_tokens_to) {
    size_workspace(kv);
    const ForwardBatch& batch = builder_.build(sequences, pad_tokens_to);
    const int64_t num_logits = batch.num_logits(), vocab = decoder_.config().vocab_size;
    if (num_logits > logits_.size(0)) logits_ = Tensor::empty({num_logits, vocab}, DType::kF32);
    TensorView logits = logits_.view().rows(0, num_logits);
    workspace_.reset();
    decoder_.forward(ctx_, batch, kv, workspace_, logits);
    return logits;
}

}  // namespace taco
