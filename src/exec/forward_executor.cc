#include "exec/forward_executor.h"

#include <algorithm>
#include <array>
#include <map>

#include "core/check.h"
#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include <cstdlib>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/env_switch.h"
#include "kernels/cuda/graph.h"
#include "kernels/cuda/stream_event.h"
#endif

namespace taco {

#ifdef TACO_WITH_CUDA
struct ForwardExecutor::Cuda {
    std::unique_ptr<cuda::DeviceStream> stream;
    std::array<std::unique_ptr<cuda::Event>, 2> uploaded;  // recorded after the upload of builders_[i]
    Tensor batch;                                          // [capacity bytes] u8: the uploaded ForwardBatch
    // The block-table rectangle the last upload wrote (ForwardBatchBuilder::Written): outside it the device table is
    // zero, or not yet written at all before the first upload, which therefore covers the whole table.
    int64_t table_rows = 0, table_cols = 0;
    // The decode graphs by bucket, all captured over the cache whose first K tensor is at graph_kv (a graph keeps
    // the addresses it was captured with: the batch buffer, the workspace, the logits buffer, the cache).
    std::map<int64_t, std::unique_ptr<cuda::CudaGraph>> graphs;
    const void* graph_kv = nullptr;
};
#else
struct ForwardExecutor::Cuda {};
#endif

namespace {

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

// The buckets of a bucketed mode: the sizes that fit the step limits, ascending and unique.
std::vector<int64_t> buckets_of(const ExecutorOptions& o) {
    std::vector<int64_t> sizes;
    for (int64_t size : o.cuda_graph_sizes)
        if (size >= 1 && size <= std::min(o.max_num_sequences, o.max_num_tokens)) sizes.push_back(size);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

}  // namespace

std::vector<int64_t> default_cuda_graph_sizes(int64_t max_num_seqs) {
    std::vector<int64_t> sizes;
    for (int64_t size : {1, 2, 4})
        if (size <= max_num_seqs) sizes.push_back(size);
    for (int64_t size = 8; size <= std::min<int64_t>(max_num_seqs, 512); size += 8) sizes.push_back(size);
    return sizes;
}

int64_t ForwardExecutor::max_model_len_for(const Decoder& decoder, int64_t requested) {
    const int64_t len = requested > 0 ? requested : decoder.config().max_position_embeddings;
    return std::max<int64_t>(1, std::min(len, decoder.max_positions()));
}

ForwardExecutor::ForwardExecutor(Decoder& decoder, const ExecutorOptions& options)
    : decoder_(decoder),
      max_model_len_(max_model_len_for(decoder, options.max_model_len)),
      activation_dtype_(activation_dtype_of(decoder)),
      workspace_(decoder.device() == Device::kCpu ? MemoryKind::kHost : MemoryKind::kDevice),
      // The CPU has no graphs; its bucketed mode (the padded layout, eagerly) still serves tests of that layout.
      graph_mode_(decoder.device() == Device::kCpu && options.graph_mode == GraphMode::kGraphs ? GraphMode::kEager
                                                                                               : options.graph_mode),
      buckets_(graph_mode_ == GraphMode::kEager ? std::vector<int64_t>{} : buckets_of(options)) {
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
    cuda_->table_rows = limits.max_num_sequences;
    cuda_->table_cols = limits.max_blocks_per_seq;
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

ForwardBatch ForwardExecutor::stage(std::span<const RunnerSequence> sequences, int64_t pad_tokens_to, int64_t bucket) {
    auto build = [&](ForwardBatchBuilder& builder) -> const ForwardBatch& {
        return bucket > 0 ? builder.build_decode_bucket(sequences, bucket) : builder.build(sequences, pad_tokens_to);
    };
    if (!cuda_) return build(builders_[0]);
#ifdef TACO_WITH_CUDA
    const size_t i = next_builder_;
    next_builder_ = (next_builder_ + 1) % builders_.size();
    ForwardBatchBuilder& builder = builders_[i];
    cuda_->uploaded[i]->synchronize();  // the last upload from this pinned buffer has read it
    const ForwardBatch& host = build(builder);
    const ForwardBatchBuilder::Written& w = builder.written();
    const TensorView& staged = builder.buffer();
    const TensorView& device = cuda_->batch.view();
    // The arrays: one copy.
    const auto arrays = [&](const TensorView& buffer) {
        return buffer.rows(int64_t(w.arrays_offset), int64_t(w.arrays_offset + w.arrays_bytes));
    };
    ops::copy(ctx_, arrays(staged), arrays(device));
    // The block table: only the rectangle of this build's entries and of the last upload's (which this copy's zeros
    // clear), so that outside the rectangle the device table stays zero. TACO_CUDA_BATCH_TABLE_RECT=0 copies the
    // step's rows whole instead (a 128k-token model's 256 rows are 8 MB, 1024 rows 32 MB, which the forward pass
    // waits for).
    static const bool rect = cuda::env_switch("TACO_CUDA_BATCH_TABLE_RECT", std::getenv("TACO_CUDA_BATCH_TABLE_RECT"),
                                              "uploading only the written rectangle of the block table");
    const int64_t width = builder.limits().max_blocks_per_seq;
    const int64_t rows = rect ? std::max(w.table_rows, cuda_->table_rows) : host.num_sequences;
    const int64_t cols = rect ? std::max(w.table_cols, cuda_->table_cols) : width;
    if (rows > 0 && cols > 0) {
        const auto table = [&](const TensorView& buffer) {
            return TensorView(buffer.data, DType::kI32, {rows, width}, buffer.device).slice(1, 0, cols);
        };
        ops::copy(ctx_, table(staged), table(device));
    }
    if (rect) {
        cuda_->table_rows = w.table_rows;
        cuda_->table_cols = w.table_cols;
    }
    cuda_->uploaded[i]->record(ctx_.stream);
    return builder.rebased(cuda_->batch.view().data, Device::kCuda);
#else
    return {};
#endif
}

TensorView ForwardExecutor::execute(std::span<const RunnerSequence> sequences, KvCacheTensors& kv,
                                    int64_t pad_tokens_to) {
    size_workspace(kv);
    const int64_t bucket = pad_tokens_to > 0 ? 0 : bucket_of(sequences);
    if (bucket > 0) {  // buckets fit logits_ (at most max_num_sequences rows)
        const ForwardBatch batch = stage(sequences, 0, bucket);
        last_logits_ = logits_.view().rows(0, int64_t(sequences.size()));
        run_bucket(batch, bucket, kv);
        return last_logits_;
    }
    const ForwardBatch batch = stage(sequences, pad_tokens_to);
    const int64_t num_logits = batch.num_logits(), vocab = decoder_.config().vocab_size;
    if (num_logits > logits_.size(0)) {
        synchronize();  // nothing queued may still read the old buffer
        logits_ = Tensor::empty({num_logits, vocab}, DType::kF32, ctx_.device);
#ifdef TACO_WITH_CUDA
        if (cuda_) cuda_->graphs.clear();  // they write the old buffer
#endif
    }
    last_logits_ = logits_.view().rows(0, num_logits);
    workspace_.reset();
    decoder_.forward(ctx_, batch, kv, workspace_, last_logits_);
    return last_logits_;
}

int64_t ForwardExecutor::bucket_of(std::span<const RunnerSequence> sequences) const {
    if (buckets_.empty() || sequences.empty()) return 0;
    for (const RunnerSequence& seq : sequences)
        if (seq.num_new_tokens != 1 || !seq.wants_logits || seq.num_prompt_logits != 0) return 0;
    const auto it = std::lower_bound(buckets_.begin(), buckets_.end(), int64_t(sequences.size()));
    return it == buckets_.end() ? 0 : *it;
}

void ForwardExecutor::run_bucket(const ForwardBatch& batch, int64_t bucket, KvCacheTensors& kv) {
    const TensorView logits = logits_.view().rows(0, bucket);
    workspace_.reset();
    if (graph_mode_ != GraphMode::kGraphs || !cuda_) {
        decoder_.forward(ctx_, batch, kv, workspace_, logits);
        return;
    }
#ifdef TACO_WITH_CUDA
    const void* kv_id = kv.k.empty() ? nullptr : kv.k.front().data;
    if (cuda_->graph_kv != kv_id) {
        synchronize();  // a replay still queued may use a graph about to go
        cuda_->graphs.clear();
        cuda_->graph_kv = kv_id;
    }
    const auto it = cuda_->graphs.find(bucket);
    if (it != cuda_->graphs.end()) {
        it->second->replay(ctx_.stream);
        ++graph_replays_;
        return;
    }
    // A missing bucket: one eager pass computes this step and creates what is made lazily on first use (GEMM plans,
    // kernel attributes) outside the capture; the capture then records the same launches at the same addresses.
    decoder_.forward(ctx_, batch, kv, workspace_, logits);
    workspace_.reset();
    auto graph = cuda::CudaGraph::capture(ctx_.stream, [&] { decoder_.forward(ctx_, batch, kv, workspace_, logits); });
    TACO_CHECK_MSG(graph.is_ok(), "the CUDA graph of decode bucket {}: {}", bucket, graph.status().message());
    cuda_->graphs.emplace(bucket, std::move(graph).value());
#endif
}

int64_t ForwardExecutor::capture_graphs(KvCacheTensors& kv) {
    if (graph_mode_ != GraphMode::kGraphs || !cuda_) return 0;
    size_workspace(kv);
    for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
        // All padding: no real sequence, nothing written to the cache; the graph depends on the bucket alone.
        const ForwardBatch batch = stage({}, 0, *it);
        run_bucket(batch, *it, kv);
    }
    synchronize();
#ifdef TACO_WITH_CUDA
    return int64_t(cuda_->graphs.size());
#else
    return 0;
#endif
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
