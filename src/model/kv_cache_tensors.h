// The paged KV cache storage (ARCHITECTURE.md, "KV cache layout"): per layer, K and V each
// [num_blocks, block_size, num_kv_heads, head_dim] in the cache dtype the runner chose (f32 on the CPU backend)
// and in its memory (host, pinned host for a GPU runner's host tier, device). Block bookkeeping lives in cache/
// (KvCacheManager); this is only the memory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"

namespace taco {

struct KvCacheTensors {
    int64_t num_blocks = 0;
    int64_t block_size = 16;
    DType dtype = DType::kF32;
    std::vector<Tensor> k;  // [num_layers] x [num_blocks, block_size, num_kv_heads, head_dim]
    std::vector<Tensor> v;

    static KvCacheTensors allocate(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                                   DType dtype = DType::kF32, MemoryKind memory = MemoryKind::kHost) {
        KvCacheTensors kv;
        kv.num_blocks = num_blocks;
        kv.block_size = block_size;
        kv.dtype = dtype;
        const int64_t dims[4] = {num_blocks, block_size, config.num_key_value_heads, config.head_dim};
        for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
            kv.k.push_back(Tensor::empty(dims, dtype, memory));
            kv.v.push_back(Tensor::empty(dims, dtype, memory));
        }
        return kv;
    }
};

}  // namespace taco
