// KV sizing: how many KV blocks each tier gets. A block holds, for every layer, K and V each
// [block_size, num_kv_heads, head_dim] in the cache dtype (ARCHITECTURE.md "KV cache layout"), so
//   bytes_per_block = 2 * num_layers * block_size * num_kv_heads * head_dim * sizeof(kv_dtype).
// Device tier: kv_cache_gb GiB of blocks (kDefaultKvCacheGb when 0), but no more than max_num_seqs requests of
// max_model_len can use; num_device_blocks > 0 replaces that budget. Either way it must hold one request of
// max_model_len, else the error names the flags to change. Host tier: host_cache_gb GiB of blocks, or
// num_host_blocks when >= 0. Pure arithmetic: nothing is allocated here.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "model/model_config.h"

namespace taco {

inline constexpr double kDefaultKvCacheGb = 4.0;  // device-tier budget when --kv-cache-gb is not given

struct KvSizingConfig {
    // The shape of one block.
    int64_t num_layers = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t block_size = 16;       // tokens per block
    DType kv_dtype = DType::kF32;  // the cache dtype: f32 on the CPU backend; bf16/fp16 on CUDA

    // The budgets (EngineConfig's fields of the same names).
    double kv_cache_gb = 0;         // device tier, GiB; 0: kDefaultKvCacheGb
    double host_cache_gb = 0;       // host tier, GiB
    int64_t num_device_blocks = 0;  // > 0: overrides kv_cache_gb
    int64_t num_host_blocks = -1;   // >= 0: overrides host_cache_gb

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
