#include "exec/forward_executor.h"

#include <algorithm>
#include <array>

#include "core/check.h"
#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/stream_event.h"
#endif

namespace taco {

#ifdef TACO_WITH_CUDA
struct ForwardExecutor::Cuda {
    std::unique_ptr<cuda::DeviceStream> stream;
    std::array<std::unique_ptr<cuda::Event>, 2> uploaded;  // recorded after the upload of builders_[i]
    Tensor batch;                                          // [capacity bytes] u8: the uploaded ForwardBatch
};
#else
struct ForwardExecutor::Cuda {};
#endif

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

// f32 on the CPU backend; the dtype the weights are served in on CUDA (fp32 accumulation inside the kernels).
DType activation_dtype_of(const Decoder& decoder) {
    return decoder.device() == Device::kCpu ? DType::kF32 : decoder.weight_dtype();
}

// Prepares the decoder for this executor's positions, head chunk and activation dtype.
RotaryLayout prepared_rotary_layout(Decoder& decoder, int64_t max_model_len, int64_t head_rows, DType activation) {
    decoder.prepare(DecoderRunOptions{max_model_len, std::max<int64_t>(head_rows, 256), activation});
    return decoder.rotary_layout();
}

}  // namespace

ForwardExecutor::ForwardExecutor(Decoder& decoder, const ExecutorOptions& options)
    : decoder_(decoder),
      max_model_len_(model_len(decoder, options.max_model_len)),
      activation_dtype_(activation_dtype_of(decoder)),
      workspace_(decoder.device() == Device::kCpu ? MemoryKind::kHost : MemoryKind::kDevice) {
    const BatchLimits limits = limits_of(options, max_model_len_);
    const RotaryLayout rotary =
        prepared_rotary_layout(decoder, max_model_len_, options.max_num_sequences, activation_dtype_);
    const int64_t vocab = decoder.config().vocab_size;
    if (decoder.device() == Device::kCpu) {
        builders_.emplace_back(limits, options.block_size, rotary, MemoryKind::kHost);
        ctx_.device = Device::kCpu;
        ctx_.scratch = &workspace_;
        logits_ = Tensor::empty({options.max_num_sequences, vocab}, DType::kF32);
        return;
    }
#ifdef TACO_WITH_CUDA
    cuda_ = std::make_unique<Cuda>();
    auto stream = cuda::DeviceStream::create();
    TACO_CHECK_MSG(stream.is_ok(), "ForwardExecutor: {}", stream.status().message());
    cuda_->stream = std::move(stream).value();
    for (auto& event : cuda_->uploaded) {
        auto made = cuda::Event::create();
        TACO_CHECK_MSG(made.is_ok(), "ForwardExecutor: {}", made.status().message());
        event = std::move(made).value();
    }
    builders_.reserve(2);
    for (int i = 0; i < 2; ++i) builders_.emplace_back(limits, options.block_size, rotary, MemoryKind::kPinnedHost);
    const int64_t batch_bytes[1] = {int64_t(builders_[0].capacity_bytes())};
    cuda_->batch = Tensor::empty(std::span<const int64_t>(batch_bytes, 1), DType::kU8, MemoryKind::kDevice);
    ctx_ = cuda_->stream->context(&workspace_);
    logits_ = Tensor::empty({options.max_num_sequences, vocab}, DType::kF32, Device::kCuda);
    host_rows_ = Tensor::empty_pinned({options.max_num_sequences, vocab}, DType::kF32);
#else
    TACO_CHECK_MSG(false, "ForwardExecutor: the decoder is on the {}, and this build has no CUDA backend",
                   device_name(decoder.device()));
#endif
}

ForwardExecutor::~ForwardExecutor() { synchronize(); }

void ForwardExecutor::synchronize() const {
#ifdef TACO_WITH_CUDA
    if (cuda_) cuda_->stream->synchronize();
#endif
}

void ForwardExecutor::size_workspace(KvCacheTensors& kv) {
    if (workspace_.sized()) return;
    const BatchLimits& l = builders_[0].limits();
#ifdef TACO_WITH_CUDA
    if (cuda_) cuda_->uploaded[0]->synchronize();  // build_shape writes builders_[0]'s buffer
#endif
    const ForwardBatch& host = builders_[0].build_shape(l.max_num_tokens, l.max_num_sequences, l.max_num_logits);
    // The ops of a dry run check devices: on CUDA they see the device views the real passes get (never read).
#ifdef TACO_WITH_CUDA
    const ForwardBatch shape = cuda_ ? builders_[0].rebased(cuda_->batch.view().data, Device::kCuda) : host;
#else
    const ForwardBatch& shape = host;
#endif
    ExecContext dry = ctx_;
    dry.dry_run = true;
    TensorView logits(nullptr, DType::kF32, {l.max_num_logits, decoder_.config().vocab_size}, ctx_.device);
    workspace_.reset();
    decoder_.forward(dry, shape, kv, workspace_, logits);
    workspace_.reserve(workspace_.high_water_bytes());
}

ForwardBatch ForwardExecutor::stage(std::span<const RunnerSequence> sequences, int64_t pad_tokens_to) {
    if (!cuda_) return builders_[0].build(sequences, pad_tokens_to);
#ifdef TACO_WITH_CUDA
    const size_t i = next_builder_;
    next_builder_ = (next_builder_ + 1) % builders_.size();
    ForwardBatchBuilder& builder = builders_[i];
    cuda_->uploaded[i]->synchronize();  // the last upload from this pinned buffer has read it
    builder.build(sequences, pad_tokens_to);
    const std::span<const uint8_t> bytes = builder.used_bytes();
    const TensorView src(const_cast<uint8_t*>(bytes.data()), DType::kU8, {int64_t(bytes.size())}, Device::kCpu);
    const TensorView dst = cuda_->batch.view().rows(0, int64_t(bytes.size()));
    ops::copy(ctx_, src, dst);
    cuda_->uploaded[i]->record(ctx_.stream);
    return builder.rebased(cuda_->batch.view().data, Device::kCuda);
#else
    return {};
#endif
}

TensorView ForwardExecutor::execute(std::span<const RunnerSequence> sequences, KvCacheTensors& kv,
                                    int64_t pad_tokens_to) {
    size_workspace(kv);
    const ForwardBatch batch = stage(sequences, pad_tokens_to);
    const int64_t num_logits = batch.num_logits(), vocab = decoder_.config().vocab_size;
    if (num_logits > logits_.size(0)) {
        synchronize();  // nothing queued may still read the old buffer
        logits_ = Tensor::empty({num_logits, vocab}, DType::kF32, ctx_.device);
    }
    last_logits_ = logits_.view().rows(0, num_logits);
    workspace_.reset();
    decoder_.forward(ctx_, batch, kv, workspace_, last_logits_);
    return last_logits_;
}

TensorView ForwardExecutor::host_logits(std::span<const int64_t> rows) {
    const int64_t n = int64_t(rows.size()), num_rows = last_logits_.defined() ? last_logits_.size(0) : 0;
    const int64_t vocab = decoder_.config().vocab_size;
    if (n == 0) return TensorView(nullptr, DType::kF32, {0, vocab});
    bool identity = true;
    for (int64_t i = 0; i < n; ++i) {
        TACO_CHECK_MSG(rows[size_t(i)] >= 0 && rows[size_t(i)] < num_rows,
                       "host_logits: row {} of a step with {} logits rows", rows[size_t(i)], num_rows);
        identity = identity && rows[size_t(i)] == i;
    }
    if (!cuda_ && identity) return last_logits_.rows(0, n);
    if (!host_rows_.defined() || n > host_rows_.size(0)) {
        const int64_t dims[2] = {std::max<int64_t>(n, 1), vocab};
        host_rows_ = Tensor::empty(dims, DType::kF32, cuda_ ? MemoryKind::kPinnedHost : MemoryKind::kHost);
    }
    const TensorView out = host_rows_.view().rows(0, n);
    // One copy per run of consecutive rows.
    for (int64_t begin = 0; begin < n;) {
        int64_t end = begin + 1;
        while (end < n && rows[size_t(end)] == rows[size_t(end - 1)] + 1) ++end;
        const int64_t first = rows[size_t(begin)];
        const TensorView src = last_logits_.rows(first, first + (end - begin));
        ops::copy(ctx_, src, out.rows(begin, end));  // a memcpy on the CPU, an async copy on the stream on CUDA
        begin = end;
    }
    synchronize();
    return out;
}

TensorView ForwardExecutor::host_logits() {
    const size_t n = last_logits_.defined() ? size_t(last_logits_.size(0)) : 0;
    while (all_rows_.size() < n) all_rows_.push_back(int64_t(all_rows_.size()));
    return host_logits(std::span<const int64_t>(all_rows_.data(), n));
}

}  // namespace taco
