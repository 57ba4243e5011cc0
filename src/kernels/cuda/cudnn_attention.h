// Causal attention of prefill steps through cuDNN 9's fused flash attention (issue 13 item 5: "cuDNN's fused SDPA
// with paged K/V measured against our kernel, keep the faster per shape"). Loaded at run time (cudnn_graph.h); where
// cuDNN or an engine for the shape is missing, the caller runs its own kernel.
//
// The graph is the one cuDNN matches to its flash-attention engine (cuDNN 9.19 has no causal mask on its SDPA_FWD
// operation, so the composite form): S = Q K^T over the paged K, scaled, padding mask (row < seq_len_q, col <
// seq_len_kv), bottom-right causal mask (col <= row + seq_len_kv - seq_len_q: a chunk's tokens are the last of their
// sequence, so a prefill chunk over a cached prefix attends to it), softmax, then P V over the paged V.
//   Q and O: ragged [b, h, s_q, d] over our packed [T, h, d] rows (offsets query_start * h * d, computed on the GPU).
//   K and V: the cache [num_blocks, block_size, h_kv, d] as cuDNN's container [num_blocks, h_kv, block_size, d] with
//            strides, the page table our block_tables [b, max_blocks] (s_kv = max_blocks * block_size).
//   GQA: K and V have h_kv heads, cuDNN broadcasts them over the h / h_kv heads of a group.
// A plan is built once per (b bucket, s_q bucket, cache shape, heads, dtype, device, stream) and kept (the first build
// of a shape takes cuDNN's heuristics and may compile: 50-90 ms on an H100); the sequence lengths, page tables and
// offsets are device tensors read at run time, so a plan serves every step of its buckets.
//
// State: on its first run (an H100 with PyTorch's cuDNN, bench/results/h100-2026-12-07) the graph built and no engine
// took it; on the next (the same kind of machine, bench/results/h100-2026-12-07b) cuda_attention_bench's
// BM_CudnnGraphProbe found an engine for every form, the op's own first among them, and the op's prefill ran 192 / 490
// / 549 TFLOP/s at 1k / 8k / 32k tokens against our kernel's 54 / 112 / 124. With it on
// (bench/results/h100-2026-12-07c) every CUDA golden, graph and executor test passed, and the 32k prompt's TTFT
// went 3.16 -> 1.29 s, the 1024-token prompt's 27.9 -> 24.0 ms; so it is on by default (TACO_CUDA_CUDNN_ATTENTION=0
// turns it off).
//
// Bits: cuDNN's kernel sums in its own order, so a row's result differs in its last bits from our kernels' (which
// agree with each other bit for bit). ARCHITECTURE.md "Attention" says where each runs.
// Plain C++ header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace taco::cuda {

// A form of the graph. cuDNN matches graphs to its engines by their shape, and which forms a given cuDNN takes is
// found by asking it: the op tries cudnn_attention_variants() in order and keeps the first with an engine.
struct SdpaGraphVariant {
    // K and V: our cache through page tables (NHD pages as a strided container), or (probes only) head-major pages
    // [num_blocks, h_kv, block_size, d] or dense [b, s_kv, h_kv, d] rows.
    enum class Kv { kPagedNhd, kPagedHnd, kDense };
    Kv kv = Kv::kPagedNhd;
    bool ragged_q = true;           // Q and O ragged over our packed rows (else padded [b, s_q] rows: probes)
    bool ragged_i64 = true;         // the ragged offsets in int64 (else int32)
    bool stats = true;              // the softmax's statistics branch (max + log of the sum), as cudnn-frontend emits
    bool padding = true;            // the padding mask from the sequence lengths (paged K/V need it)
    bool causal = true;             // bottom-right causal with the padding mask's lengths, top-left without
    bool causal_int_index = false;  // the causal mask's GEN_INDEX in int32 (else in float, as cudnn-frontend)
    std::string name() const;
};

// The forms that compute ops::paged_attention on our cache, in the order the op tries them.
std::vector<SdpaGraphVariant> cudnn_attention_variants();
// Forms that need another layout or lack a mask: what a cuDNN takes at all, for cuda_attention_bench's probe.
std::vector<SdpaGraphVariant> cudnn_attention_probe_variants();
// Builds (and does not run) the plan of `variant` for b sequences of up to s_q query tokens over a cache of
// num_blocks blocks of block_size tokens, tables max_blocks wide: "" with build_ms set, or why not.
std::string cudnn_attention_probe(const SdpaGraphVariant& variant, int64_t b, int64_t s_q, int64_t heads,
                                  int64_t kv_heads, int64_t head_dim, int64_t num_blocks, int64_t block_size,
                                  int64_t max_blocks, DType dtype, double* build_ms);

// Empty when cuDNN is loaded and new enough for this path, else why not (in words).
std::string cudnn_attention_unavailable();

// Queues causal attention of the step (ops::paged_attention's contract, for f16/bf16 without sliding window,
// soft-capping or ALiBi) on ctx.stream. Returns "" when queued; otherwise why it could not (no cuDNN, an unsupported
// operand, no engine for the shape), with nothing queued.
std::string cudnn_paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache,
                                  const TensorView& v_cache, const ops::AttentionMetadata& batch,
                                  const ops::AttentionParams& params, const TensorView& out);

// The query-length bucket a step's plan is built for: max_query_len rounded up to a power of two, at least 64.
int64_t cudnn_attention_query_bucket(int64_t max_query_len);
// The sequence-count bucket a step's plan is built for: its sequences rounded up to a power of two. The rows past
// them have no query and no keys. Without it every count of sequences was a plan of its own, built (tens of
// milliseconds) in the first step with that count: bench batch's TTFT at 2 sequences 57 -> 99 ms on an H100.
int64_t cudnn_attention_batch_bucket(int64_t num_seqs);

// Builds, on the current device and `stream` (a cudaStream_t), the plan of every (sequence-count bucket, query bucket)
// a step within the limits can take (up to max_num_seqs sequences and max_num_tokens tokens, a longest chunk of at
// least min_query_len and at most max_model_len tokens) for every shape of heads that a step over a cache of
// num_blocks blocks has run on cuDNN on that stream, so that serving builds none (20-90 ms each on an H100, up to ~54
// of them for 256 sequences and 8,192 tokens). Returns how many it built (0 without cuDNN); shapes cuDNN has no engine
// for are kept refused, as on first use.
int64_t cudnn_attention_build_buckets(int64_t max_num_seqs, int64_t max_num_tokens, int64_t max_model_len,
                                      int64_t min_query_len, int64_t num_blocks, void* stream);
// How many plans are built and how many shapes refused, in this process (tests).
struct CudnnPlanCounts {
    int64_t plans = 0, refused = 0;
};
CudnnPlanCounts cudnn_attention_plan_counts();

}  // namespace taco::cuda
