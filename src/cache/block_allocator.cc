#include "cache/block_allocator.h"

#include "core/check.h"

namespace taco {

BlockAllocator::BlockAllocator(int64_t num_blocks) {
    TACO_CHECK_GE(num_blocks, 0);
    TACO_CHECK_LE(num_blocks, int64_t{INT32_MAX});
    ref_counts_.assign(static_cast<size_t>(num_blocks), 0);
    free_.reserve(static_cast<size_t>(num_blocks));
    for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<BlockId>(b));
}

void BlockAllocator::check_id(BlockId block) const {
    TACO_CHECK_MSG(block >= 0 && block < static_cast<BlockId>(ref_counts_.size()), "block id {} outside [0, {})", block,
                   ref_counts_.size());
}

std::optional<BlockId> BlockAllocator::allocate() {
    if (free_.empty()) return std::nullopt;
    const BlockId block = free_.back();
    free_.pop_back();
    ref_counts_[static_cast<size_t>(block)] = 1;
    return block;
}

void BlockAllocator::add_ref(BlockId block) {
    check_id(block);
    int32_t& count = ref_counts_[static_cast<size_t>(block)];
    TACO_CHECK_MSG(count > 0, "add_ref on free block {}", block);
    ++count;
}

bool BlockAllocator::release(BlockId block) {
    check_id(block);
    int32_t& count = ref_counts_[static_cast<size_t>(block)];
    TACO_CHECK_MSG(count > 0, "release of free block {} (double free)", block);
    if (--count > 0) return false;
    free_.push_back(block);
    return true;
}

int32_t BlockAllocator::ref_count(BlockId block) const {
    check_id(block);
    return ref_counts_[static_cast<size_t>(block)];
}

}  // namespace taco
