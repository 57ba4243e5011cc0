// BlockAllocator: a fixed pool of KV blocks of one tier, with reference counts. A block is owned by everyone
// holding a reference (requests through their block tables, the prefix tree through its node); it returns to
// the free list when the last reference is released. The free list is a LIFO stack, so allocation order is
// deterministic: a fresh allocator hands out 0, 1, 2, ... and a just-released block is reused first.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cache/block.h"

namespace taco {

class BlockAllocator {
public:
    explicit BlockAllocator(int64_t num_blocks);

    // A free block with ref count 1, or nullopt when none is free.
    std::optional<BlockId> allocate();
    // One more holder of an allocated block.
    void add_ref(BlockId block);
    // Drops one reference; returns true when it was the last (the block is free again).
    bool release(BlockId block);

    int32_t ref_count(BlockId block) const;
    bool is_free(BlockId block) const { return ref_count(block) == 0; }
    int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
    int64_t num_blocks() const { return static_cast<int64_t>(ref_counts_.size()); }

private:
    void check_id(BlockId block) const;

    std::vector<int32_t> ref_counts_;  // [num_blocks]; 0 <=> the block is in free_
    std::vector<BlockId> free_;        // stack, top = back()
};

}  // namespace taco
