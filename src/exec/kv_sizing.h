// KV sizing: how many KV blocks each tier gets. A block holds, for every layer, K and V each
// [block_size, num_kv_heads, head_dim] in the cache dtype (ARCHITECTURE.md "KV cache layout"), so
//   bytes_per_block = 2 * num_layers * block_size * num_kv_heads * head_dim * sizeof(kv_dtype).
// Device tier, the first rule that applies:
//   1. num_device_blocks > 0: that many (--num-gpu-blocks-override, tests);
//   2. kv_cache_gb > 0 (--kv-cache-gb): that many GiB of blocks, but no more than max_num_seqs requests of
//      max_model_len can use;
//   3. a GPU (gpu set): vLLM's --gpu-memory-utilization rule, GpuMemoryBudget below;
//   4. the CPU: kDefaultKvCacheGb GiB, capped as in 2.
// Whichever it is, the tier must hold one request of max_model_len, else the error names the numbers and the flags
// to change. Host tier: host_cache_gb GiB of blocks (--swap-space / --host-cache-gb), or num_host_blocks when >= 0.
// Pure arithmetic: nothing is allocated or measured here (the runner measures, exec/model_runner.h).
#pragma once

#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "core/status.h"
#include "model/model_config.h"

namespace taco {

inline constexpr double kDefaultKvCacheGb = 4.0;             // CPU device-tier budget when --kv-cache-gb is not given
inline constexpr double kDefaultGpuMemoryUtilization = 0.9;  // vLLM's default
inline constexpr double kDefaultSwapSpaceGb = 4.0;           // vLLM's --swap-space default: the host tier on CUDA

// vLLM's rule for the device tier on a GPU: this process may use utilization x total_bytes of the GPU's memory; the
// KV cache gets what is left of that after what the process uses without it (used_bytes, measured once the weights
// are loaded, the workspace reserved and one profiling step at max_num_batched_tokens has run: weights, activation
// workspace, GEMM workspace, lazily loaded kernels and library memory):
//   num_device_blocks = floor((utilization * total_bytes - used_bytes) / bytes_per_block),
// not capped by max_num_seqs (blocks that requests leave behind hold the prefix cache). As vLLM, the memory free
// when the process started (free_bytes_at_start) must cover utilization * total_bytes: otherwise other processes
// hold memory this one was told it may use, and the error says so.
struct GpuMemoryBudget {
    double utilization = kDefaultGpuMemoryUtilization;
    int64_t total_bytes = 0;
    int64_t free_bytes_at_start = 0;
    int64_t used_bytes = 0;
};

struct KvSizingConfig {
    // The shape of one block.
    int64_t num_layers = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t block_size = 16;       // tokens per block
    DType kv_dtype = DType::kF32;  // the cache dtype: f32 on the CPU backend; the activation dtype on CUDA

    // The budgets (EngineConfig's fields of the same names).
    double kv_cache_gb = 0;              // device tier, GiB; 0: the GPU rule on CUDA, kDefaultKvCacheGb on the CPU
    double host_cache_gb = 0;            // host tier, GiB
    int64_t num_device_blocks = 0;       // > 0: overrides every other device rule
    int64_t num_host_blocks = -1;        // >= 0: overrides host_cache_gb
    std::optional<GpuMemoryBudget> gpu;  // set when the device tier is GPU memory

    // What the device tier must serve.
    int64_t max_model_len = 0;
    int64_t max_num_seqs = 1;

    // The shape fields from a model's config; the budgets are left at their defaults.
    static KvSizingConfig for_model(const ModelConfig& model, int64_t block_size, DType kv_dtype = DType::kF32);
    Status validate() const;
};

struct KvSizing {
    int64_t bytes_per_block = 0;
    int64_t blocks_per_seq = 0;  // blocks one request of max_model_len needs
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = 0;
};

// Bytes of K and V for one block across all layers (the config's shape fields only).
int64_t kv_bytes_per_block(const KvSizingConfig& config);
int64_t kv_bytes_per_block(const ModelConfig& model, int64_t block_size, DType kv_dtype = DType::kF32);

// The block counts of both tiers, or an error a user can act on (a bad field, or too little memory for one
// request of max_model_len).
Result<KvSizing> size_kv_cache(const KvSizingConfig& config);

}  // namespace taco
