#include "exec/model_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/check.h"
#include "core/log.h"
#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/stream_event.h"
#endif

namespace taco {

#ifdef TACO_WITH_CUDA
struct ModelRunner::Cuda {
    std::unique_ptr<cuda::Stream> copy_stream;
    std::unique_ptr<cuda::Event> forward_done;  // recorded on the compute stream before a step's copies
    std::unique_ptr<cuda::Event> copies_done;   // recorded on the copy stream after them
};
#else
struct ModelRunner::Cuda {};
#endif

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// CUDA's 2-D copies take pitches up to cudaDevAttrMaxPitch, 2^31 - 1 bytes on every GPU so far: a tier whose
// layers are larger (a small model's device tier on a large GPU) is copied a tensor at a time.
constexpr size_t kMaxCudaCopyPitchBytes = (size_t(1) << 31) - 1;

#ifdef TACO_WITH_CUDA
template <class T>
std::unique_ptr<T> created_or_die(Result<std::unique_ptr<T>> made) {
    TACO_CHECK_MSG(made.is_ok(), "ModelRunner: {}", made.status().message());
    return std::move(made).value();
}

int64_t device_bytes_in_use() { return allocator_for(MemoryKind::kDevice).stats().bytes_in_use; }
#endif

}  // namespace

ModelRunner::ModelRunner(std::unique_ptr<Decoder> decoder) : decoder_(std::move(decoder)) {}

ModelRunner::~ModelRunner() {
    if (executor_) synchronize();
}

void ModelRunner::synchronize() const {
    executor_->synchronize();
#ifdef TACO_WITH_CUDA
    if (cuda_) cuda_->copy_stream->synchronize();
#endif
}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(std::unique_ptr<Decoder> decoder,
                                                         const RunnerOptions& options) {
    TACO_CHECK(decoder != nullptr);
    std::unique_ptr<ModelRunner> runner(new ModelRunner(std::move(decoder)));
    const Decoder& model = *runner->decoder_;
    const bool on_gpu = model.device() == Device::kCuda;
#ifdef TACO_WITH_CUDA
    const int64_t allocated_before = on_gpu ? device_bytes_in_use() : 0;  // the weights, mostly
    const cuda::DeviceMemory at_create = on_gpu ? cuda::device_memory() : cuda::DeviceMemory{};
    if (on_gpu) {
        runner->cuda_ = std::make_unique<Cuda>();
        runner->cuda_->copy_stream = created_or_die(cuda::Stream::create());
        runner->cuda_->forward_done = created_or_die(cuda::Event::create());
        runner->cuda_->copies_done = created_or_die(cuda::Event::create());
    }
#else
    TACO_CHECK_MSG(!on_gpu, "ModelRunner: the decoder is on the cuda, and this build has no CUDA backend");
#endif
    auto sizing_config = [&](DType kv_dtype, int64_t max_model_len) {
        KvSizingConfig sizing = KvSizingConfig::for_model(model.config(), options.block_size, kv_dtype);
        sizing.kv_cache_gb = options.kv_cache_gb;
        sizing.host_cache_gb = options.host_cache_gb;
        sizing.num_device_blocks = options.num_device_blocks;
        sizing.num_host_blocks = options.num_host_blocks;
        sizing.max_model_len = max_model_len;
        sizing.max_num_seqs = options.max_num_seqs;
        return sizing;
    };
    if (!on_gpu) {
        // The CPU's KV budget is known before any buffer exists, so a context length that one request's KV cannot
        // hold (a config's max_position_embeddings of 2^30) is refused here, naming the flags, before the executor
        // sizes rotary tables and workspace for it (128 GiB of tables: an abort in the allocator). The CPU's
        // activations, hence its KV cache, are f32.
        const int64_t max_model_len = ForwardExecutor::max_model_len_for(model, options.max_model_len);
        TACO_RETURN_IF_ERROR(size_kv_cache(sizing_config(DType::kF32, max_model_len)).status());
    }
    ExecutorOptions e;
    e.max_num_tokens = options.max_num_batched_tokens;
    e.max_num_sequences = options.max_num_seqs;
    e.max_model_len = options.max_model_len;
    e.block_size = options.block_size;
    e.graph_mode = options.graph_mode;
    e.cuda_graph_sizes = options.cuda_graph_sizes;
    runner->executor_ = std::make_unique<ForwardExecutor>(*runner->decoder_, e);

    KvSizingConfig sizing = sizing_config(runner->executor_->activation_dtype(), runner->executor_->max_model_len());
#ifdef TACO_WITH_CUDA
    if (on_gpu) {
        // As vLLM's profile run: the largest step, so what it needs beyond the preallocated buffers (kernels loaded
        // on first launch, library state) is counted before the KV cache takes the rest. Nothing in a pass
        // allocates, so the memory in use after it is its peak.
        runner->run_profiling_step(options);
        const cuda::DeviceMemory after = cuda::device_memory();
        const int64_t allocated_after = device_bytes_in_use();
        GpuMemoryBudget gpu;
        gpu.utilization = options.gpu_memory_utilization;
        gpu.total_bytes = int64_t(after.total_bytes);
        if (options.device_free_bytes_before_load >= 0) {
            gpu.free_bytes_at_start = options.device_free_bytes_before_load;
            gpu.used_bytes = std::max<int64_t>(0, gpu.free_bytes_at_start - int64_t(after.free_bytes));
        } else {
            gpu.free_bytes_at_start =
                std::min<int64_t>(int64_t(at_create.free_bytes) + allocated_before, int64_t(after.total_bytes));
            gpu.used_bytes =
                allocated_before + std::max<int64_t>(0, int64_t(at_create.free_bytes) - int64_t(after.free_bytes));
        }
        sizing.gpu = gpu;
        log_info(
            "GPU memory: {:.2f} GiB in all; this process uses {:.2f} GiB besides the KV cache (weights and what was "
            "allocated before the runner {:.2f} GiB, the runner's buffers {:.2f} GiB, kernels, libraries and "
            "allocation rounding {:.2f} GiB); --gpu-memory-utilization {}",
            double(gpu.total_bytes) / kGiB, double(gpu.used_bytes) / kGiB, double(allocated_before) / kGiB,
            double(allocated_after - allocated_before) / kGiB,
            double(std::max<int64_t>(0, gpu.used_bytes - allocated_after)) / kGiB, gpu.utilization);
    }
#endif
    TACO_RETURN_IF_ERROR(runner->allocate_kv(options, sizing));
    runner->executor_->size_workspace(runner->device_kv_);  // the CPU: first sizing; CUDA: sized by the profile
    if (on_gpu && options.graph_mode == GraphMode::kGraphs) {
        const auto start = std::chrono::steady_clock::now();
        const int64_t graphs = runner->executor_->capture_graphs(runner->device_kv_);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        log_info("CUDA graphs: {} decode batch sizes captured in {:.2f} s", graphs, seconds);
    }
#ifdef TACO_WITH_CUDA
    if (on_gpu && cuda::cudnn_attention_warmup_enabled()) runner->warm_attention_plans(options);
#endif
    return runner;
}

void ModelRunner::run_profiling_step(const RunnerOptions& options) {
    const ModelConfig& config = decoder_->config();
    const DType dtype = executor_->activation_dtype();
    // A one-block cache, zeroed so the pass reads finite numbers: every sequence's block table is all block 0.
    KvCacheTensors scratch = KvCacheTensors::allocate(config, 1, options.block_size, dtype, MemoryKind::kDevice);
    KvCacheTensors zeros = KvCacheTensors::allocate(config, 1, options.block_size, dtype, MemoryKind::kHost);
    std::memset(zeros.storage.view().data, 0, zeros.storage.view().nbytes());
    ops::copy(executor_->context(), zeros.storage.view(), scratch.storage.view());
    run_dummy_step(scratch, options.max_num_batched_tokens,
                   std::min(options.max_num_seqs, options.max_num_batched_tokens), options.block_size);
}

void ModelRunner::run_dummy_step(KvCacheTensors& kv, int64_t num_tokens, int64_t num_seqs, int64_t block_size) {
    // num_tokens tokens (token id 0) over num_seqs sequences from position 0, none longer than max_model_len, each
    // sampling its last token; every block table entry is block 0.
    const int64_t max_len = executor_->max_model_len();
    const std::vector<int32_t> ids(size_t(std::min(num_tokens, max_len)), 0);
    const std::vector<int32_t> table(size_t((max_len + block_size - 1) / block_size), 0);
    std::vector<RunnerSequence> sequences;
    int64_t remaining = num_tokens;
    for (int64_t i = 0; i < num_seqs && remaining > 0; ++i) {
        const int64_t length = std::min(max_len, (remaining + (num_seqs - i) - 1) / (num_seqs - i));
        RunnerSequence seq;
        seq.token_ids = std::span<const int32_t>(ids.data(), size_t(length));
        seq.num_new_tokens = length;
        seq.block_table = table;
        seq.wants_logits = true;
        sequences.push_back(seq);
        remaining -= length;
    }
    executor_->execute(sequences, kv);
    executor_->synchronize();
}

#ifdef TACO_WITH_CUDA
void ModelRunner::warm_attention_plans(const RunnerOptions& options) {
    // cuDNN takes the steps whose longest chunk has at least kCudnnAttentionMinQueryLen tokens. One such step on the
    // real cache (nothing is cached yet: it writes block 0) gives every layer's shape of cache and heads; then every
    // bucket's plan of those shapes is built.
    const int64_t n = cuda::kCudnnAttentionMinQueryLen;
    if (!cuda::cudnn_attention_enabled() || options.max_num_batched_tokens < n || executor_->max_model_len() < n)
        return;
    const auto start = std::chrono::steady_clock::now();
    run_dummy_step(device_kv_, n, 1, options.block_size);
    const int64_t built =
        cuda::cudnn_attention_build_buckets(options.max_num_seqs, options.max_num_batched_tokens,
                                            executor_->max_model_len(), n, device_kv_.num_blocks, executor_->stream());
    executor_->synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log_info("cuDNN attention: {} plans built in {:.2f} s (TACO_CUDA_CUDNN_WARMUP=1)", built, seconds);
}
#endif

Status ModelRunner::allocate_kv(const RunnerOptions& options, const KvSizingConfig& sizing_config) {
    TACO_ASSIGN_OR_RETURN(sizing_, size_kv_cache(sizing_config));
    const ModelConfig& config = decoder_->config();
    const DType dtype = sizing_config.kv_dtype;
    const double device_gb = double(sizing_.num_device_blocks) * double(sizing_.bytes_per_block) / kGiB;
    const double host_gb = double(sizing_.num_host_blocks) * double(sizing_.bytes_per_block) / kGiB;
    const bool on_gpu = cuda_ != nullptr;
#ifdef TACO_WITH_CUDA
    if (on_gpu) {
        const cuda::DeviceMemory now = cuda::device_memory();
        if (double(sizing_.num_device_blocks) * double(sizing_.bytes_per_block) > double(now.free_bytes))
            return error(
                "the KV cache of {} blocks needs {:.2f} GiB of GPU memory, and {:.2f} GiB are free: lower "
                "--kv-cache-gb, --num-gpu-blocks-override or --gpu-memory-utilization",
                sizing_.num_device_blocks, device_gb, double(now.free_bytes) / kGiB);
    }
#endif
    device_kv_ = KvCacheTensors::allocate(config, sizing_.num_device_blocks, options.block_size, dtype,
                                          on_gpu ? MemoryKind::kDevice : MemoryKind::kHost);
    host_kv_ = KvCacheTensors::allocate(config, sizing_.num_host_blocks, options.block_size, dtype,
                                        on_gpu ? MemoryKind::kPinnedHost : MemoryKind::kHost);
    log_info("KV cache: {} blocks of {} tokens in {} on the {} ({:.2f} GiB), host tier {} blocks ({:.2f} GiB)",
             sizing_.num_device_blocks, options.block_size, dtype_name(dtype), device_name(executor_->device()),
             device_gb, sizing_.num_host_blocks, host_gb);
    return Status::ok();
}

int64_t ModelRunner::copy_blocks(std::span<const KvCopy> copies) {
    if (copies.empty()) return 0;
    ExecContext copy_ctx;  // the CPU: memcpy; CUDA: the copy stream
#ifdef TACO_WITH_CUDA
    if (cuda_) {
        cuda_->forward_done->record(executor_->stream());
        cuda_->forward_done->wait(cuda_->copy_stream->get());
        copy_ctx.device = Device::kCuda;
        copy_ctx.stream = cuda_->copy_stream->get();
    }
#endif
    // A run of blocks is one copy of every layer's K and V (KvCacheTensors::blocks, a rectangle of rows), where the
    // backend takes the tiers' row pitch; else one copy per tensor.
    const bool one_copy_per_run =
        copy_ctx.device == Device::kCpu ||
        std::max(device_kv_.row_pitch_bytes(), host_kv_.row_pitch_bytes()) <= kMaxCudaCopyPitchBytes;
    int64_t num_copies = 0;
    for (size_t begin = 0; begin < copies.size();) {
        const KvCopy& c = copies[begin];
        const KvCacheTensors& src_kv = c.src_host ? host_kv_ : device_kv_;
        const KvCacheTensors& dst_kv = c.dst_host ? host_kv_ : device_kv_;
        // A run of copies between tiers with consecutive source and destination blocks is one copy (the two sides
        // are different memory, so the run cannot read what it writes).
        size_t end = begin + 1;
        while (c.src_host != c.dst_host && end < copies.size() && copies[end].src_host == c.src_host &&
               copies[end].dst_host == c.dst_host && copies[end].src_block == copies[end - 1].src_block + 1 &&
               copies[end].dst_block == copies[end - 1].dst_block + 1)
            ++end;
        const int64_t count = int64_t(end - begin);
        TACO_CHECK_MSG(c.src_block >= 0 && c.src_block + count <= src_kv.num_blocks && c.dst_block >= 0 &&
                           c.dst_block + count <= dst_kv.num_blocks,
                       "copy of blocks [{}, {}) of {} to [{}, {}) of {}: the tiers have {} and {} blocks", c.src_block,
                       c.src_block + count, c.src_host ? "host" : "device", c.dst_block, c.dst_block + count,
                       c.dst_host ? "host" : "device", src_kv.num_blocks, dst_kv.num_blocks);
        if (one_copy_per_run) {
            ops::copy(copy_ctx, src_kv.blocks(c.src_block, c.src_block + count),
                      dst_kv.blocks(c.dst_block, c.dst_block + count));
            ++num_copies;
        } else {
            for (size_t layer = 0; layer < src_kv.k.size(); ++layer) {
                ops::copy(copy_ctx, src_kv.k[layer].rows(c.src_block, c.src_block + count),
                          dst_kv.k[layer].rows(c.dst_block, c.dst_block + count));
                ops::copy(copy_ctx, src_kv.v[layer].rows(c.src_block, c.src_block + count),
                          dst_kv.v[layer].rows(c.dst_block, c.dst_block + count));
                num_copies += 2;
            }
        }
        begin = end;
    }
#ifdef TACO_WITH_CUDA
    if (cuda_) {
        cuda_->copies_done->record(cuda_->copy_stream->get());
        cuda_->copies_done->wait(executor_->stream());
    }
#endif
    return num_copies;
}

TensorView ModelRunner::execute(std::span<const RunnerSequence> sequences) {
    return executor_->execute(sequences, device_kv_);
}

}  // namespace taco
