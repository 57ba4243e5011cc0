// The host side of ops::paged_attention on CUDA (paged_attention.h): dtype checks, the launch shape, the split-KV
// choice and the scratch it needs; the kernels are in paged_attention.cu.
#include "kernels/cuda/paged_attention.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/env_switch.h"
#include "kernels/cuda/paged_attention_kernels.h"

namespace taco::cuda {
namespace {

int multiprocessor_count() {
    int device = 0, count = 0;
    TACO_CUDA_CHECK(cudaGetDevice(&device));
    TACO_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
}

int64_t partitions_of(int64_t max_seq_len) {
    return (std::max<int64_t>(max_seq_len, 1) + kAttentionPartitionKeys - 1) / kAttentionPartitionKeys;
}

}  // namespace

bool decode_attention_enabled() {
    static const bool enabled =
        env_switch("TACO_CUDA_DECODE_ATTENTION", std::getenv("TACO_CUDA_DECODE_ATTENTION"), "the decode kernel");
    return enabled;
}

bool cudnn_attention_enabled() {
    static const bool enabled = env_switch("TACO_CUDA_CUDNN_ATTENTION", std::getenv("TACO_CUDA_CUDNN_ATTENTION"),
                                           "cuDNN's fused attention for long prefill steps");
    return enabled;
}

namespace {

// The merge's form (paged_attention.h's TACO_CUDA_MERGE_SCALES_FIRST), read once.
MergeForm merge_form_chosen() {
    static const MergeForm form = [] {
        switch (env_override("TACO_CUDA_MERGE_SCALES_FIRST", std::getenv("TACO_CUDA_MERGE_SCALES_FIRST"),
                             "the split-KV merge's scales-first form")) {
            case 1: return MergeForm::kScalesFirst;
            case 0: return MergeForm::kChunked;
            default: return MergeForm::kByLength;
        }
    }();
    return form;
}

}  // namespace

bool attention_early_prologue_enabled() {
    static const bool enabled =
        env_switch("TACO_CUDA_ATTENTION_EARLY_PROLOGUE", std::getenv("TACO_CUDA_ATTENTION_EARLY_PROLOGUE"),
                   "the decode and merge kernels' prologue before their wait");
    return enabled;
}

bool cudnn_attention_warmup_enabled() {
    static const bool enabled = env_opt_in("TACO_CUDA_CUDNN_WARMUP", std::getenv("TACO_CUDA_CUDNN_WARMUP"),
                                           "building cuDNN's attention plans at start-up");
    return enabled;
}

size_t paged_attention_scratch_bytes(int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t max_seq_len) {
    const double bytes = double(num_tokens) * double(num_heads) * double(partitions_of(max_seq_len)) *
                         double(head_dim + 2) * sizeof(float);
    return bytes >= double(kMaxAttentionScratchBytes) ? kMaxAttentionScratchBytes : size_t(bytes);
}

void paged_attention_with(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache,
                          const TensorView& v_cache, const ops::AttentionMetadata& batch,
                          const ops::AttentionParams& params, const TensorView& partials, SplitKv split,
                          const TensorView& out, AttentionKernel kernel) {
    const DType act = q.dtype, cache = k_cache.dtype;
    TACO_CHECK_MSG(out.dtype == act, "paged_attention on CUDA: out is {}, q {}", dtype_name(out.dtype),
                   dtype_name(act));
    TACO_CHECK_MSG(v_cache.dtype == cache, "paged_attention on CUDA: k_cache is {}, v_cache {}", dtype_name(cache),
                   dtype_name(v_cache.dtype));
    TACO_CHECK_MSG(cache == act || cache == DType::kF32,
                   "paged_attention on CUDA: a {} cache for {} queries (the cache is in the activation dtype or f32)",
                   dtype_name(cache), dtype_name(act));
    const int64_t num_tokens = q.shape[0], num_heads = q.shape[1], head_dim = q.shape[2];
    TACO_CHECK_MSG(head_dim >= 1 && head_dim <= kMaxAttentionHeadDim,
                   "paged_attention on CUDA: head_dim {} (1 to {} supported)", head_dim, kMaxAttentionHeadDim);
    TACO_CHECK_MSG(k_cache.shape[1] >= 1, "paged_attention on CUDA: block size {}", k_cache.shape[1]);
    TACO_CHECK_MSG(num_tokens < INT_MAX && k_cache.shape[0] < INT_MAX && batch.block_tables.shape[1] < INT_MAX,
                   "paged_attention on CUDA: {} tokens, {} blocks", num_tokens, k_cache.shape[0]);
    TACO_CHECK_MSG(!partials.defined() || partials.device == Device::kCuda,
                   "paged_attention on CUDA: the scratch (ctx.scratch) is {} memory, not the GPU's",
                   device_name(partials.device));
    const int64_t num_seqs = batch.seq_lens.shape[0];
    // No rows (or only padding). num_heads == 0 passes ops.cc's check (0 % kv heads) and would divide by the
    // empty group below.
    if (num_tokens == 0 || num_seqs == 0 || num_heads == 0) return;
    TACO_CHECK_MSG(batch.max_seq_len > 0, "paged_attention on CUDA: max_seq_len {} (the step's longest sequence)",
                   batch.max_seq_len);
    // Long prefill steps on cuDNN's fused attention where it runs (paged_attention.h); otherwise ours below.
    if (kernel == AttentionKernel::kCudnn ||
        (kernel == AttentionKernel::kAuto && batch.max_query_len >= kCudnnAttentionMinQueryLen &&
         cudnn_attention_enabled())) {
        const std::string why = cudnn_paged_attention(ctx, q, k_cache, v_cache, batch, params, out);
        if (why.empty()) return;
        TACO_CHECK_MSG(kernel != AttentionKernel::kCudnn, "paged_attention on cuDNN: {}", why);
    }

    AttentionLaunch p{};
    p.q = q.data;
    p.k_cache = k_cache.data;
    p.v_cache = v_cache.data;
    p.out = out.data;
    p.query_start = static_cast<const int32_t*>(batch.query_start.data);
    p.seq_lens = static_cast<const int32_t*>(batch.seq_lens.data);
    p.positions = static_cast<const int32_t*>(batch.positions.data);
    p.block_tables = static_cast<const int32_t*>(batch.block_tables.data);
    p.alibi_slopes = params.alibi_slopes.ndim > 0 ? static_cast<const float*>(params.alibi_slopes.data) : nullptr;
    p.num_tokens = int(num_tokens);
    p.num_seqs = int(num_seqs);
    p.num_heads = int(num_heads);
    p.num_kv_heads = int(k_cache.shape[2]);
    p.head_dim = int(head_dim);
    p.block_size = int(k_cache.shape[1]);
    p.max_blocks = int(batch.block_tables.shape[1]);
    p.num_blocks = int(k_cache.shape[0]);
    p.max_seq_len = batch.max_seq_len;
    p.group = p.num_heads / p.num_kv_heads;
    // The tensor cores take f16/bf16 at the head dims they are instantiated for, with 16-byte aligned rows (views
    // of a fused projection may not be); every other case, and f32 always, runs on the CUDA cores. The choice depends
    // on the dtypes, the head dim and the operands' addresses only, never on the batch, so it never changes a row.
    const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
    p.tensor_cores = kernel != AttentionKernel::kCudaCores && mma_attention_supports(act, cache, int(head_dim)) &&
                     aligned(q.data) && aligned(out.data) && aligned(k_cache.data) && aligned(v_cache.data);
    // Steps of one query token per sequence (decode) take the decode kernel: one CTA per token and head chunk, so
    // a row's CTA never depends on the other rows (every query length is correct there; longer ones only waste it).
    p.decode = p.tensor_cores && batch.max_query_len <= 1 && decode_attention_supports(act, cache, int(head_dim)) &&
               ((kernel == AttentionKernel::kAuto && decode_attention_enabled()) || kernel == AttentionKernel::kDecode);
    const int rows_per_cta = p.decode         ? kDecodeAttentionRowsPerCta
                             : p.tensor_cores ? kMmaAttentionRowsPerCta
                                              : kAttentionRowsPerCta;
    p.heads_per_cta = std::min(p.group, rows_per_cta);
    p.head_chunks = (p.group + p.heads_per_cta - 1) / p.heads_per_cta;
    // Decode steps: one token per CTA (its rows are the group's heads). Otherwise as many consecutive tokens as
    // fill the CTA's rows, so prefill chunks share each K/V tile among them.
    p.tokens_per_cta = batch.max_query_len > 1 && !p.decode ? std::max(1, rows_per_cta / p.heads_per_cta) : 1;
    p.num_partitions = int(partitions_of(batch.max_seq_len));
    p.scale = params.scale;
    p.softcap = params.logit_softcap;
    p.window = params.sliding_window;
    p.alibi_bf16 = params.alibi_bf16_key_positions;

    const unsigned grid_x = unsigned((num_tokens + p.tokens_per_cta - 1) / p.tokens_per_cta);
    // gridDim.y and .z are at most 65535: kv heads x head chunks here, heads in the merge kernel, partitions when
    // split (a longer max_seq_len does not split).
    constexpr int64_t kMaxGridYz = 65535;
    TACO_CHECK_MSG(int64_t(p.num_kv_heads) * p.head_chunks <= kMaxGridYz && num_heads <= kMaxGridYz,
                   "paged_attention on CUDA: {} heads over {} kv heads exceed the grid", num_heads, p.num_kv_heads);
    const unsigned grid_y = unsigned(p.num_kv_heads * p.head_chunks);
    const size_t partial_bytes =
        size_t(num_tokens) * size_t(num_heads) * size_t(p.num_partitions) * size_t(head_dim + 2) * sizeof(float);
    const bool fits = partials.defined() && partial_bytes <= partials.nbytes() && p.num_partitions <= kMaxGridYz;
    const int sms = multiprocessor_count();  // once per launch: the split choice and the split grid
    const int64_t ctas = int64_t(grid_x) * grid_y;
    // The CTAs the GPU runs at once: the decode kernel's (one warp each, several per SM) fill it; the others aim at
    // two per SM.
    const int64_t resident = p.decode ? int64_t(decode_attention_ctas_per_sm(act, int(head_dim))) * sms : 2 * sms;
    bool split_kv = false;
    switch (split) {
        case SplitKv::kNever: break;
        case SplitKv::kAlways:
            TACO_CHECK_MSG(fits,
                           "paged_attention: split-KV needs {} bytes of partials, the scratch has {} ({} partitions)",
                           partial_bytes, partials.defined() ? partials.nbytes() : 0, p.num_partitions);
            split_kv = true;
            break;
        case SplitKv::kAuto:
            // Split when the rows alone leave most of the GPU idle and there is more than one partition to share
            // (the decode kernel: when each row's CTA would get at least two).
            split_kv = fits && p.num_partitions > 1 && (p.decode ? 2 * ctas <= resident : ctas < resident);
            break;
    }
    p.act = act;
    p.cache = cache;
    p.merge_form = merge_form_chosen();
    p.early_prologue = attention_early_prologue_enabled();
    p.grid_x = grid_x;
    p.grid_y = grid_y;
    p.grid_z = 1;
    if (split_kv) {
        // Enough CTAs to fill the GPU (the decode kernel's rows spread over its resident CTAs; the others' twice
        // over), each taking the partitions z of a stride: under CUDA graphs max_seq_len is the whole capacity,
        // whose thousands of mostly empty partitions would otherwise each cost a CTA.
        const int64_t fill = p.decode ? resident / ctas : (resident + ctas - 1) / ctas;
        p.partials = static_cast<float*>(partials.data);
        p.grid_z = unsigned(std::clamp<int64_t>(fill, 1, p.num_partitions));
    }
    p.threads = p.decode         ? 32
                : p.tensor_cores ? kMmaAttentionRowsPerCta / 16 * 32
                                 : p.tokens_per_cta * p.heads_per_cta * 32;
    const int64_t rows = p.tokens_per_cta * p.heads_per_cta;
    p.smem_bytes = size_t(2 * kAttentionTileKeys * (head_dim + 1) + rows * head_dim) * sizeof(float);
    launch_paged_attention(p, ctx.stream);
}

void paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const ops::AttentionMetadata& batch, const ops::AttentionParams& params,
                     const TensorView& partials, const TensorView& out) {
    paged_attention_with(ctx, q, k_cache, v_cache, batch, params, partials, SplitKv::kAuto, out);
}

}  // namespace taco::cuda
