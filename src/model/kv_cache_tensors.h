// The paged KV cache storage (ARCHITECTURE.md, "KV cache layout"): per layer, K and V each
// [num_blocks, block_size, num_kv_heads, head_dim] in the cache dtype the runner chose (f32 on the CPU backend)
// and in its memory (host, pinned host for a GPU runner's host tier, device). Block bookkeeping lives in cache/
// (KvCacheManager); this is only the memory.
//
// All 2 x num_layers tensors are rows of one allocation, at one pitch (K of layer l is row 2l, V row 2l + 1), so
// that the same blocks of every layer are one 2-D copy (blocks()): moving a block between tiers is one copy, not
// 2 x num_layers (the host tier's demotions, many per step once the device tier is full, were 64 copies a block
// on an 8B Llama, ~4 ms of CUDA calls per engine step).
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
    Tensor storage;             // [2 * num_layers, pitch]: a layer's K or V, padded to 256 bytes
    std::vector<TensorView> k;  // [num_layers] x [num_blocks, block_size, num_kv_heads, head_dim], rows of storage
    std::vector<TensorView> v;

    static KvCacheTensors allocate(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                                   DType dtype = DType::kF32, MemoryKind memory = MemoryKind::kHost);

    MemoryKind memory() const { return storage.memory(); }
    // Elements of one block of one layer's K (or V): block_size * num_kv_heads * head_dim.
    int64_t block_elements() const { return block_elements_; }
    // Bytes from one layer's K (or V) to the next tensor: the pitch of blocks()' rows.
    size_t row_pitch_bytes() const;
    // Blocks [begin, end) of every layer's K and V: [2 * num_layers, (end - begin) * block_elements()], rows at
    // row_pitch_bytes() (ops::copy's rectangle of rows).
    TensorView blocks(int64_t begin, int64_t end) const;

private:
    int64_t block_elements_ = 0;
};

}  // namespace taco
