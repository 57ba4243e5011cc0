#include "cache/block_allocator.h"

#include <gtest/gtest.h>

namespace taco {
namespace {

TEST(BlockAllocator, HandsOutBlocksInOrderWithRefCountOne) {
    BlockAllocator allocator(3);
    EXPECT_EQ(allocator.num_blocks(), 3);
    EXPECT_EQ(allocator.num_free(), 3);
    for (BlockId expected = 0; expected < 3; ++expected) {
        const std::optional<BlockId> b = allocator.allocate();
        ASSERT_TRUE(b.has_value());
        EXPECT_EQ(*b, expected);
        EXPECT_EQ(allocator.ref_count(*b), 1);
    }
    EXPECT_EQ(allocator.num_free(), 0);
    EXPECT_FALSE(allocator.allocate().has_value());
}

TEST(BlockAllocator, ReleaseReturnsTrueOnlyWhenLastReferenceGoes) {
    BlockAllocator allocator(2);
    const BlockId b = *allocator.allocate();
    allocator.add_ref(b);
    allocator.add_ref(b);
    EXPECT_EQ(allocator.ref_count(b), 3);
    EXPECT_FALSE(allocator.release(b));
    EXPECT_FALSE(allocator.release(b));
    EXPECT_EQ(allocator.num_free(), 1);
    EXPECT_TRUE(allocator.release(b));
    EXPECT_TRUE(allocator.is_free(b));
    EXPECT_EQ(allocator.num_free(), 2);
}

TEST(BlockAllocator, ReusesTheLastReleasedBlockFirst) {
    BlockAllocator allocator(4);
    const BlockId a = *allocator.allocate();
    const BlockId b = *allocator.allocate();
    allocator.release(a);
    allocator.release(b);
    EXPECT_EQ(*allocator.allocate(), b);
    EXPECT_EQ(*allocator.allocate(), a);
    EXPECT_EQ(*allocator.allocate(), 2);
}

TEST(BlockAllocator, EmptyPoolHasNothingToGive) {
    BlockAllocator allocator(0);
    EXPECT_EQ(allocator.num_free(), 0);
    EXPECT_FALSE(allocator.allocate().has_value());
}

TEST(BlockAllocatorDeathTest, DoubleFreeAborts) {
    BlockAllocator allocator(2);
    const BlockId b = *allocator.allocate();
    allocator.release(b);
    EXPECT_DEATH(allocator.release(b), "double free");
}

TEST(BlockAllocatorDeathTest, OutOfRangeIdAborts) {
    BlockAllocator allocator(2);
    EXPECT_DEATH(allocator.release(2), "outside");
    EXPECT_DEATH(allocator.add_ref(-1), "outside");
    EXPECT_DEATH(allocator.ref_count(7), "outside");
}

TEST(BlockAllocatorDeathTest, AddRefOnFreeBlockAborts) {
    BlockAllocator allocator(2);
    EXPECT_DEATH(allocator.add_ref(0), "free block");
}

}  // namespace
}  // namespace taco
