// ForwardExecutor: runs a Decoder over steps of sequences on the decoder's device: the ForwardBatch builder, the
// activation workspace and the logits buffer. The workspace is sized once by a dry run at the largest step (the
// limits), so a warmed-up step allocates nothing and the same step shape gets the same addresses. ModelRunner (the
// engine's), perplexity and the tests all run the decoder through one of these.
//
// CPU (decoder.device() == kCpu): f32 activations in a host workspace; the batch is built in host memory and read
// in place; logits are host memory.
// CUDA: the executor owns the compute stream (cuda::DeviceStream: stream, cuBLASLt handle, GEMM workspace);
// activations are in the decoder's weight dtype in a device workspace; logits are f32 in device memory. A step's
// ForwardBatch is built on the host in a pinned buffer and uploaded into one device buffer with two copies (its
// arrays, and its block table's rows: ForwardBatchBuilder::Written), and the decoder reads the builder's rebased()
// device views. Two pinned buffers alternate: before
// a build overwrites one, the host waits for the event recorded after that buffer's last upload (two steps back,
// long done), so the host may build step N + 1 while the GPU still runs step N. The device buffer needs no such
// wait: every upload and the forward pass that reads it are queued on the compute stream, so an upload starts only
// once the previous forward pass is done. host_logits() copies logits rows to a pinned buffer and waits for them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/workspace.h"
#include "exec/forward_batch_builder.h"
#include "kernels/exec_context.h"
#include "model/decoder.h"
#include "model/kv_cache_tensors.h"

namespace taco {

// How CUDA decode steps run (ignored on the CPU, whose steps are always eager).
enum class GraphMode {
    kEager,         // every step launched op by op (--enforce-eager)
    kGraphs,        // decode steps of up to the largest size replay a CUDA graph of their bucket
    kEagerBuckets,  // decode steps padded to their bucket as kGraphs pads them, launched op by op (tests)
};

struct ExecutorOptions {
    int64_t max_num_tokens = 8192;    // per step (max_num_batched_tokens)
    int64_t max_num_sequences = 256;  // per step (max_num_seqs)
    int64_t max_model_len = 0;        // positions a sequence can reach; 0: the decoder's default
    int64_t block_size = 16;
    GraphMode graph_mode = GraphMode::kEager;
    // The decode batch sizes with a graph (buckets), ascending; a step of S sequences runs in the smallest bucket
    // >= S, a larger one eagerly. Sizes past min(max_num_sequences, max_num_tokens) are dropped.
    std::vector<int64_t> cuda_graph_sizes;
};

// vLLM's default buckets: 1, 2, 4, then every multiple of 8 up to 512, cut at max_num_seqs.
std::vector<int64_t> default_cuda_graph_sizes(int64_t max_num_seqs);

class ForwardExecutor {
public:
    ForwardExecutor(Decoder& decoder, const ExecutorOptions& options);
    ~ForwardExecutor();
    ForwardExecutor(const ForwardExecutor&) = delete;
    ForwardExecutor& operator=(const ForwardExecutor&) = delete;

    // Sizes the workspace by a dry run over `kv`'s shapes (once; execute() does it on first use). `kv` must be on
    // the executor's device in its activation dtype; its number of blocks does not matter.
    void size_workspace(KvCacheTensors& kv);
    // CUDA with GraphMode::kGraphs: captures the graph of every bucket over `kv` (each after one eager warm-up pass
    // of its shape), so serving never captures. Returns the number of graphs; 0 elsewhere. execute() captures a
    // missing bucket itself, and again when it is given another cache than the graphs were captured over.
    int64_t capture_graphs(KvCacheTensors& kv);
    // Graphs replayed and decode steps run eagerly (for logs and tests).
    int64_t graph_replays() const { return graph_replays_; }
    // One forward pass; returns logits [sum of num_logits(), vocab] f32 on the executor's device, sequence by
    // sequence (each with its prompt-logit rows first, then its last token's row), valid until the next call. On
    // CUDA the pass is queued, not finished: read rows through host_logits(). pad_tokens_to > the step's tokens adds
    // padding rows (slot -1), as a CUDA graph bucket does; they change no real row.
    TensorView execute(std::span<const RunnerSequence> sequences, KvCacheTensors& kv, int64_t pad_tokens_to = 0);

    // Rows of the last execute()'s logits on the host, [rows.size(), vocab] f32, in the order given: on the CPU the
    // logits themselves when `rows` is 0, 1, 2, ... (else a gathered copy); on CUDA a copy into a pinned buffer (one
    // copy per run of consecutive rows) that the host has waited for. Valid until the next execute() or
    // host_logits().
    TensorView host_logits(std::span<const int64_t> rows);
    // Every row of the last execute()'s logits on the host.
    TensorView host_logits();
    // Blocks until the work queued on the compute stream is done (nothing to wait for on the CPU).
    void synchronize() const;

    Device device() const { return ctx_.device; }
    DType activation_dtype() const { return activation_dtype_; }
    void* stream() const { return ctx_.stream; }  // cudaStream_t of the compute stream; nullptr on the CPU
    const Workspace& workspace() const { return workspace_; }
    const ForwardBatchBuilder& builder() const { return builders_.front(); }
    const ExecContext& context() const { return ctx_; }
    int64_t max_model_len() const { return max_model_len_; }
    // The max_model_len() an executor made with `requested` (ExecutorOptions::max_model_len) would have.
    static int64_t max_model_len_for(const Decoder& decoder, int64_t requested);

private:
    struct Cuda;  // the CUDA side: stream, upload events, device batch buffer, pinned logits (empty on the CPU build)

    // The step's batch as the decoder reads it: host views on the CPU, uploaded device views on CUDA. bucket > 0:
    // the fixed layout of a decode bucket (ForwardBatchBuilder::build_decode_bucket).
    ForwardBatch stage(std::span<const RunnerSequence> sequences, int64_t pad_tokens_to, int64_t bucket = 0);
    // The bucket a step runs in (0: none, eager as built).
    int64_t bucket_of(std::span<const RunnerSequence> sequences) const;
    // Runs a staged bucket step: replays its graph (capturing it first when missing) or, in kEagerBuckets, launches
    // it op by op.
    void run_bucket(const ForwardBatch& batch, int64_t bucket, KvCacheTensors& kv);

    Decoder& decoder_;
    int64_t max_model_len_;
    DType activation_dtype_;
    std::unique_ptr<Cuda> cuda_;                 // null on the CPU
    std::vector<ForwardBatchBuilder> builders_;  // 1 (host memory) on the CPU, 2 alternating pinned ones on CUDA
    size_t next_builder_ = 0;
    Workspace workspace_;
    ExecContext ctx_;
    Tensor logits_;  // [capacity, vocab] f32 on the device; grows only for steps with many prompt-logit rows
    TensorView last_logits_;
    Tensor host_rows_;               // [capacity, vocab] f32: host_logits()'s copies (pinned on CUDA)
    std::vector<int64_t> all_rows_;  // 0, 1, 2, ...: host_logits() of every row
    GraphMode graph_mode_ = GraphMode::kEager;
    std::vector<int64_t> buckets_;  // ascending; empty: no bucketed steps
    int64_t graph_replays_ = 0;
};

}  // namespace taco
