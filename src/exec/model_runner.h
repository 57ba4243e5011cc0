// ModelRunner: turns one scheduling step into a ForwardBatch, runs the decoder over the paged KV cache and
// returns the logits of the sequences that sample. It owns the KV memory of both tiers, the executor (batch
// builder, workspace, logits buffer) and executes the block copies the cache manager asked for. It sizes the KV
// tiers itself (exec/kv_sizing.h), since it picks the cache dtype and, on a GPU, measures what the rest takes. It
// knows nothing of requests or scheduling.
//
// Memory: on the CPU both tiers are f32 host memory. On CUDA the device tier is device memory in the activation
// dtype (the weights' served dtype) and the host tier pinned host memory in the same dtype.
//
// Block copies on CUDA run on a copy stream of their own, ordered against the compute stream by two events:
//   1. copy_blocks() records `forward_done` on the compute stream (after everything queued there: the last forward
//      pass) and the copy stream waits for it, so a block swapped out to the host, or copied on the device, is read
//      after the forward pass that wrote it, and a block swapped in is not written while a forward pass that still
//      reads its old contents runs;
//   2. it records `copies_done` on the copy stream after the copies and the compute stream waits for it, so the next
//      forward pass starts after every swapped-in block has landed and after every swapped-out block was read (that
//      pass may overwrite the device block it was copied from).
// Neither side blocks the host. A step's copies thus sit between two forward passes; the separate stream is what a
// later change needs to prefetch host hits while a forward pass runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/forward_executor.h"
#include "exec/kv_sizing.h"
#include "model/decoder.h"

namespace taco {

struct KvCopy {
    bool src_host = false;
    int32_t src_block = 0;
    bool dst_host = false;
    int32_t dst_block = 0;
};

struct RunnerOptions {
    int64_t block_size = 16;
    int64_t max_num_batched_tokens = 8192;
    int64_t max_num_seqs = 256;
    int64_t max_model_len = 0;  // 0: the model's
    // The KV budgets, as KvSizingConfig takes them (exec/kv_sizing.h: which rule applies when).
    double kv_cache_gb = 0;
    double host_cache_gb = 0;
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = -1;
    double gpu_memory_utilization = kDefaultGpuMemoryUtilization;
    // CUDA graphs of decode steps (ExecutorOptions): captured at the end of create(), after the KV cache.
    GraphMode graph_mode = GraphMode::kEager;
    std::vector<int64_t> cuda_graph_sizes;
    // CUDA: the device's free bytes before the weights were loaded (cuda::device_memory()): the GPU rule counts
    // this process's use from there. Negative: not measured; the runner then counts the device memory its
    // allocators hand out (weights included) plus what the profiling step added.
    int64_t device_free_bytes_before_load = -1;
};

class ModelRunner {
public:
    // Builds the executor on the decoder's device and sizes its workspace; on CUDA runs one profiling step of
    // max_num_batched_tokens dummy tokens and measures the device memory this process uses; sizes both KV tiers
    // (size_kv_cache) and allocates them. Errors: the sizing's (too little memory for one request of
    // max_model_len, with the numbers), or a KV cache larger than the free device memory.
    static Result<std::unique_ptr<ModelRunner>> create(std::unique_ptr<Decoder> decoder, const RunnerOptions& options);
    ~ModelRunner();
    ModelRunner(const ModelRunner&) = delete;
    ModelRunner& operator=(const ModelRunner&) = delete;

    const ModelConfig& config() const { return decoder_->config(); }
    int64_t block_size() const { return device_kv_.block_size; }
    Device device() const { return executor_->device(); }
    DType kv_dtype() const { return device_kv_.dtype; }
    const KvSizing& kv_sizing() const { return sizing_; }

    // Runs the copies in order (device <-> host, device -> device); asynchronous on CUDA (see above). Returns the
    // copy operations it issued: one per run of consecutive blocks (all layers' K and V in one 2-D copy), or one
    // per run and tensor where a tier's layers exceed CUDA's 2-D copy pitch (2 GiB).
    int64_t copy_blocks(std::span<const KvCopy> copies);

    // One forward pass over all sequences; returns logits [sum of num_logits(), vocab] f32 on the runner's device:
    // sequence by sequence, each with its prompt-logit rows first, then its last token's row. Valid until the next
    // call; read them on the host through host_logits().
    TensorView execute(std::span<const RunnerSequence> sequences);
    // Rows of the last execute()'s logits on the host (ForwardExecutor::host_logits).
    TensorView host_logits(std::span<const int64_t> rows) { return executor_->host_logits(rows); }
    TensorView host_logits() { return executor_->host_logits(); }
    // Blocks until the compute and copy streams are idle (the KV tiers may then be read directly, e.g. by tests).
    void synchronize() const;

    const KvCacheTensors& device_kv() const { return device_kv_; }
    const KvCacheTensors& host_kv() const { return host_kv_; }
    const ForwardExecutor& executor() const { return *executor_; }

private:
    struct Cuda;  // copy stream and events (empty on the CPU build)

    explicit ModelRunner(std::unique_ptr<Decoder> decoder);
    // CUDA: one forward pass at the largest step the limits allow, over a one-block scratch cache (it also sizes
    // the workspace); waits for it.
    void run_profiling_step(const RunnerOptions& options);
    // One prefill pass of num_tokens tokens over num_seqs sequences on `kv` (every block table entry block 0); waits.
    void run_dummy_step(KvCacheTensors& kv, int64_t num_tokens, int64_t num_seqs, int64_t block_size);
    // CUDA with TACO_CUDA_CUDNN_WARMUP=1: builds cuDNN's attention plans for every bucket the limits allow
    // (cudnn_attention_build_buckets) after one prefill step on the real cache, so serving builds none.
    void warm_attention_plans(const RunnerOptions& options);
    Status allocate_kv(const RunnerOptions& options, const KvSizingConfig& sizing_config);

    std::unique_ptr<Decoder> decoder_;
    std::unique_ptr<Cuda> cuda_;  // null on the CPU
    std::unique_ptr<ForwardExecutor> executor_;
    KvSizing sizing_;
    KvCacheTensors device_kv_;
    KvCacheTensors host_kv_;
};

}  // namespace taco
