// Block ids, tiers and the copies the cache asks the backend to make. cache/ holds no tensors: it decides,
// the runner's backend moves bytes (memcpy on the CPU, async copies on CUDA).
#pragma once

#include <cstdint>
#include <span>

namespace taco {

using BlockId = int32_t;
using RequestId = uint64_t;

enum class Tier : uint8_t { kDevice, kHost };

// Copy one block's K and V (all layers) from (src_tier, src) to (dst_tier, dst). Copies of a step are executed
// in order, before that step's forward pass.
struct BlockCopy {
    Tier src_tier = Tier::kDevice;
    BlockId src = 0;
    Tier dst_tier = Tier::kDevice;
    BlockId dst = 0;
    bool operator==(const BlockCopy&) const = default;
};

// Key of a full block in the prefix tree: a hash of its block_size tokens chained with its parent's key (vLLM's
// chained block hashes). Tokens are compared on lookup too, so a collision costs a miss, never a wrong hit; tests
// pass a degenerate function to force collisions.
using BlockHashFn = uint64_t (*)(std::span<const int32_t> block_tokens, uint64_t parent_key);

}  // namespace taco
