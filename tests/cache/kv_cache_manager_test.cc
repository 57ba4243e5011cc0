#include "cache/kv_cache_manager.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "kv_sim.h"

namespace taco {
namespace {

using testing::KvSim;

std::vector<int32_t> seq(int32_t n, int32_t start = 0) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), start);
    return v;
}

KvCacheConfig config(int64_t device, int64_t host = 0, int64_t block_size = 4, bool prefix_caching = true) {
    KvCacheConfig c;
    c.num_device_blocks = device;
    c.num_host_blocks = host;
    c.block_size = block_size;
    c.enable_prefix_caching = prefix_caching;
    return c;
}

// One request's whole life up to its last computed token: match, allocate everything, run the copies, compute
// the rest (in `sim`), publish its full blocks. Returns the matched token count.
int64_t prefill(KvCacheManager& m, KvSim& sim, RequestId id, const std::vector<int32_t>& tokens, uint64_t salt = 0) {
    const int64_t matched = m.match_prefix(id, tokens, salt);
    EXPECT_TRUE(m.allocate(id, int64_t(tokens.size())));
    sim.apply(m.take_pending_copies());
    EXPECT_EQ(sim.num_correct(m.block_table(id), tokens, matched, salt), matched);
    sim.write(m.block_table(id), tokens, matched, int64_t(tokens.size()), salt);
    m.cache_blocks(id, tokens, int64_t(tokens.size()), salt);
    m.check_invariants();
    return matched;
}

TEST(KvCacheConfig, ValidateNamesTheBadField) {
    EXPECT_TRUE(config(8).validate().is_ok());
    EXPECT_NE(config(0).validate().message().find("num_device_blocks"), std::string::npos);
    EXPECT_NE(config(8, -1).validate().message().find("num_host_blocks"), std::string::npos);
    EXPECT_NE(config(8, 0, 12).validate().message().find("block_size"), std::string::npos);
}

TEST(KvCacheManager, PrefixHitAfterARequestsBlocksAreCached) {
    KvCacheManager m(config(16));
    KvSim sim(16, 0, 4);
    const std::vector<int32_t> prompt = seq(10);
    EXPECT_EQ(prefill(m, sim, 1, prompt), 0);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 2);

    std::vector<int32_t> longer = prompt;
    longer.push_back(99);
    EXPECT_EQ(m.match_prefix(2, longer), 8);
    const std::vector<BlockId>& t1 = m.block_table(1);
    const std::vector<BlockId>& t2 = m.block_table(2);
    ASSERT_EQ(t2.size(), 2u);
    EXPECT_EQ(t2[0], t1[0]);
    EXPECT_EQ(t2[1], t1[1]);
    EXPECT_EQ(m.ref_count(Tier::kDevice, t1[0]), 3);  // two requests and the tree
    const KvCacheStats s = m.stats();
    EXPECT_EQ(s.prefix_queries_tokens, 10 + 11);
    EXPECT_EQ(s.prefix_hits_device_tokens, 8);
    EXPECT_EQ(s.prefix_hits_host_tokens, 0);
    m.check_invariants();
}

TEST(KvCacheManager, MatchLeavesTheLastTokenToCompute) {
    KvCacheManager m(config(16));
    KvSim sim(16, 0, 4);
    prefill(m, sim, 1, seq(8));
    m.free(1);
    EXPECT_EQ(m.match_prefix(2, seq(8)), 4);  // 8 tokens cached, at most 7 may be reused
    EXPECT_EQ(m.match_prefix(3, seq(1)), 0);
    EXPECT_EQ(m.match_prefix(4, std::vector<int32_t>{}), 0);
    m.check_invariants();
}

TEST(KvCacheManager, PartialBlockIsNeverShared) {
    KvCacheManager m(config(16));
    KvSim sim(16, 0, 4);
    const std::vector<int32_t> prompt = seq(7);
    prefill(m, sim, 1, prompt);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 1);
    EXPECT_EQ(prefill(m, sim, 2, prompt), 4);
    EXPECT_EQ(m.block_table(2)[0], m.block_table(1)[0]);
    EXPECT_NE(m.block_table(2)[1], m.block_table(1)[1]);
    EXPECT_EQ(m.ref_count(Tier::kDevice, m.block_table(1)[1]), 1);
}

TEST(KvCacheManager, EvictsLeastRecentlyUsedLeavesFirstAndNeverLockedBlocks) {
    KvCacheManager m(config(6));
    KvSim sim(6, 0, 4);
    const std::vector<int32_t> a = seq(9, 0), b = seq(9, 100);
    prefill(m, sim, 1, a);
    m.free(1);
    prefill(m, sim, 2, b);
    m.free(2);
    EXPECT_EQ(m.num_available_blocks(), 6);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 4);

    // 2 free blocks, then A's leaf (least recently used) goes; its parent stays.
    ASSERT_TRUE(m.allocate(3, 12));
    EXPECT_EQ(m.stats().num_cached_device_blocks, 3);
    EXPECT_TRUE(m.take_pending_copies().empty());  // no host tier: dropped, nothing copied
    ASSERT_TRUE(m.allocate(3, 16));                // now A's root block
    EXPECT_EQ(m.stats().num_cached_device_blocks, 2);
    m.check_invariants();

    EXPECT_EQ(m.match_prefix(4, a), 0);
    m.free(4);
    EXPECT_EQ(m.match_prefix(5, b), 8);  // B survives, and is now locked by request 5
    EXPECT_EQ(m.num_available_blocks(), 0);
    EXPECT_FALSE(m.allocate(6, 1));
    EXPECT_EQ(m.match_prefix(7, b), 8);  // still there
    m.check_invariants();
}

TEST(KvCacheManager, DemotesToHostThenAHostHitPromotesWithCopiesInOrder) {
    KvCacheManager m(config(4, 4));
    KvSim sim(4, 4, 4);
    const std::vector<int32_t> a = seq(9);
    prefill(m, sim, 1, a);
    const std::vector<BlockId> a_blocks = m.block_table(1);  // [0, 1, 2]; 0 and 1 cached
    m.free(1);

    // Another request needs all 4 device blocks: A's leaf is demoted first, then its parent.
    ASSERT_TRUE(m.allocate(2, 16));
    const std::vector<BlockCopy> demotions = m.take_pending_copies();
    const std::vector<BlockCopy> expected_demotions = {{Tier::kDevice, a_blocks[1], Tier::kHost, 0},
                                                       {Tier::kDevice, a_blocks[0], Tier::kHost, 1}};
    EXPECT_EQ(demotions, expected_demotions);
    sim.apply(demotions);
    sim.write(m.block_table(2), seq(16, 500), 0, 16, 0);  // overwrites every device block
    EXPECT_EQ(m.stats().num_cached_host_blocks, 2);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 0);
    m.free(2);
    m.check_invariants();

    // A host hit: each promotion gets its device block first, then copies host -> device.
    std::vector<int32_t> a_again = a;
    a_again.push_back(1234);
    EXPECT_EQ(m.match_prefix(3, a_again), 8);
    const std::vector<BlockId>& table = m.block_table(3);
    ASSERT_EQ(table.size(), 2u);
    const std::vector<BlockCopy> promotions = m.take_pending_copies();
    const std::vector<BlockCopy> expected_promotions = {{Tier::kHost, 1, Tier::kDevice, table[0]},
                                                        {Tier::kHost, 0, Tier::kDevice, table[1]}};
    EXPECT_EQ(promotions, expected_promotions);
    sim.apply(promotions);
    EXPECT_EQ(sim.num_correct(table, a_again, 8, 0), 8);  // the KV made the round trip

    const KvCacheStats s = m.stats();
    EXPECT_EQ(s.num_demotions, 2);
    EXPECT_EQ(s.num_promotions, 2);
    EXPECT_EQ(s.prefix_hits_host_tokens, 8);
    EXPECT_EQ(s.num_cached_host_blocks, 0);
    EXPECT_EQ(s.num_cached_device_blocks, 2);
    m.check_invariants();
}

TEST(KvCacheManager, FullHostTierDropsItsLeastRecentlyUsedBlock) {
    KvCacheManager m(config(2, 2));
    KvSim sim(2, 2, 4);
    const std::vector<int32_t> a = seq(5, 0), b = seq(5, 100), c = seq(5, 200), d = seq(5, 300);
    for (RequestId id = 1; const std::vector<int32_t>* p : {&a, &b, &c, &d}) {
        prefill(m, sim, id, *p);
        m.free(id);
        ++id;
    }
    // a was demoted by b, b by c, c by d, which found the host full: a, the host's LRU, was dropped.
    const KvCacheStats s = m.stats();
    EXPECT_EQ(s.num_demotions, 3);
    EXPECT_EQ(s.num_cached_host_blocks, 2);
    EXPECT_EQ(s.num_cached_device_blocks, 1);
    EXPECT_EQ(prefill(m, sim, 10, a), 0);
    m.free(10);
    EXPECT_EQ(prefill(m, sim, 11, c), 4);  // c came back from the host with the right KV
    EXPECT_EQ(m.stats().prefix_hits_host_tokens, 4);
    m.check_invariants();
}

TEST(KvCacheManager, SaltSeparatesCaches) {
    KvCacheManager m(config(16));
    KvSim sim(16, 0, 4);
    prefill(m, sim, 1, seq(9), /*salt=*/1);
    EXPECT_EQ(m.match_prefix(2, seq(9), 2), 0);
    EXPECT_EQ(m.match_prefix(3, seq(9), 0), 0);
    EXPECT_EQ(m.match_prefix(4, seq(9), 1), 8);
}

uint64_t colliding_hash(std::span<const int32_t>, uint64_t parent_key) { return parent_key + 1; }

TEST(KvCacheManager, HashCollisionNeverGivesAFalseHit) {
    KvCacheManager m(config(16), &colliding_hash);
    KvSim sim(16, 0, 4);
    const std::vector<int32_t> x = seq(9, 0), y = seq(9, 50);
    prefill(m, sim, 1, x);
    EXPECT_EQ(prefill(m, sim, 2, y), 0);  // same keys, other tokens: a miss, and y is not cached
    EXPECT_EQ(m.stats().num_cached_device_blocks, 2);
    EXPECT_EQ(prefill(m, sim, 3, y), 0);
    EXPECT_EQ(prefill(m, sim, 4, x), 8);
}

TEST(KvCacheManager, ForkSharesBlocksAndTheFirstWriterCopiesTheSharedPartialBlock) {
    KvCacheManager m(config(8));
    KvSim sim(8, 0, 4);
    std::vector<int32_t> parent = seq(6);
    ASSERT_TRUE(m.allocate(1, 6));
    sim.write(m.block_table(1), parent, 0, 6, 0);
    m.fork(1, 2);
    const std::vector<BlockId> shared = m.block_table(1);
    EXPECT_EQ(m.block_table(2), shared);
    EXPECT_EQ(m.ref_count(Tier::kDevice, shared[0]), 2);
    EXPECT_EQ(m.ref_count(Tier::kDevice, shared[1]), 2);
    EXPECT_EQ(m.num_blocks_needed(1, 7), 1);  // the copy
    m.check_invariants();

    std::vector<int32_t> child = parent;
    parent.push_back(40);
    child.push_back(41);
    ASSERT_TRUE(m.allocate(1, 7));
    const std::vector<BlockId> t1 = m.block_table(1);
    EXPECT_EQ(t1[0], shared[0]);
    EXPECT_NE(t1[1], shared[1]);
    const std::vector<BlockCopy> expected = {{Tier::kDevice, shared[1], Tier::kDevice, t1[1]}};
    const std::vector<BlockCopy> copies = m.take_pending_copies();
    EXPECT_EQ(copies, expected);
    EXPECT_EQ(m.ref_count(Tier::kDevice, shared[1]), 1);
    EXPECT_EQ(m.ref_count(Tier::kDevice, t1[1]), 1);
    EXPECT_EQ(m.ref_count(Tier::kDevice, shared[0]), 2);  // full blocks stay shared

    ASSERT_TRUE(m.allocate(2, 7));  // now the only holder: writes in place
    EXPECT_TRUE(m.take_pending_copies().empty());
    EXPECT_EQ(m.block_table(2), shared);
    EXPECT_EQ(m.stats().num_cow_copies, 1);

    sim.apply(copies);
    sim.write(m.block_table(1), parent, 6, 7, 0);
    sim.write(m.block_table(2), child, 6, 7, 0);
    EXPECT_EQ(sim.num_correct(m.block_table(1), parent, 7, 0), 7);
    EXPECT_EQ(sim.num_correct(m.block_table(2), child, 7, 0), 7);
    m.check_invariants();
    m.free(1);
    m.free(2);
    EXPECT_EQ(m.num_available_blocks(), 8);
}

TEST(KvCacheManager, ForkAtABlockBoundaryNeedsNoCopy) {
    KvCacheManager m(config(8));
    ASSERT_TRUE(m.allocate(1, 8));
    m.fork(1, 2);
    EXPECT_EQ(m.num_blocks_needed(1, 9), 1);
    ASSERT_TRUE(m.allocate(1, 9));
    ASSERT_TRUE(m.allocate(2, 9));
    EXPECT_TRUE(m.take_pending_copies().empty());
    EXPECT_NE(m.block_table(1)[2], m.block_table(2)[2]);
    m.check_invariants();
}

TEST(KvCacheManager, AllocateFailsWithoutChangingAnything) {
    KvCacheManager m(config(4, 2));
    KvSim sim(4, 2, 4);
    prefill(m, sim, 1, seq(5));  // 2 blocks, one cached
    ASSERT_TRUE(m.allocate(2, 4));
    m.free(1);  // 1 evictable + 1 free
    ASSERT_TRUE(m.allocate(3, 2));
    m.fork(3, 4);
    m.take_pending_copies();
    // Request 3 needs a copy of its shared partial block plus 1 new block: 2 <= 2 available...
    EXPECT_EQ(m.num_blocks_needed(3, 8), 2);
    // ...but 3 new blocks and the copy do not fit.
    const KvCacheStats before = m.stats();
    const std::vector<BlockId> table = m.block_table(3);
    EXPECT_EQ(m.num_available_blocks(), 2);
    EXPECT_FALSE(m.allocate(3, 16));
    EXPECT_FALSE(m.allocate(5, 12));
    EXPECT_EQ(m.block_table(3), table);
    EXPECT_TRUE(m.block_table(5).empty());
    EXPECT_TRUE(m.take_pending_copies().empty());
    EXPECT_EQ(m.num_available_blocks(), 2);
    const KvCacheStats after = m.stats();
    EXPECT_EQ(after.num_used_device_blocks, before.num_used_device_blocks);
    EXPECT_EQ(after.num_cached_device_blocks, before.num_cached_device_blocks);
    EXPECT_EQ(after.num_demotions, before.num_demotions);
    m.check_invariants();
    EXPECT_TRUE(m.allocate(3, 8));
    EXPECT_EQ(m.num_available_blocks(), 0);
    m.check_invariants();
}

TEST(KvCacheManager, IdenticalBlockPublishedTwiceKeepsTheTreesBlockAndTheRequestsOwn) {
    KvCacheManager m(config(16));
    KvSim sim(16, 0, 4);
    std::vector<int32_t> tokens = seq(9);
    // Both requests compute the same prompt in the same step.
    for (RequestId id : {1, 2}) {
        EXPECT_EQ(m.match_prefix(id, tokens), 0);
        ASSERT_TRUE(m.allocate(id, 9));
        sim.write(m.block_table(id), tokens, 0, 9, 0);
    }
    m.cache_blocks(1, tokens, 9);
    m.cache_blocks(2, tokens, 9);
    m.check_invariants();
    EXPECT_EQ(m.stats().num_cached_device_blocks, 2);
    EXPECT_EQ(m.ref_count(Tier::kDevice, m.block_table(2)[0]), 1);  // private: the tree kept request 1's
    // Request 2 continues; its next full block joins the tree under the shared chain.
    tokens.insert(tokens.end(), {9, 10, 11, 12});
    ASSERT_TRUE(m.allocate(2, 13));
    sim.write(m.block_table(2), tokens, 9, 13, 0);
    m.cache_blocks(2, tokens, 13);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 3);
    const std::vector<BlockId> t1 = m.block_table(1), t2 = m.block_table(2);
    m.free(1);
    m.free(2);
    m.check_invariants();
    EXPECT_EQ(prefill(m, sim, 3, tokens), 12);
    const std::vector<BlockId> expected = {t1[0], t1[1], t2[2]};
    EXPECT_EQ(std::vector<BlockId>(m.block_table(3).begin(), m.block_table(3).begin() + 3), expected);
}

TEST(KvCacheManager, PublishingADemotedBlockAgainTakesTheRequestsBlock) {
    KvCacheManager m(config(4, 4));
    KvSim sim(4, 4, 4);
    const std::vector<int32_t> tokens = seq(5);
    for (RequestId id : {1, 2}) {
        ASSERT_TRUE(m.allocate(id, 5));
        sim.write(m.block_table(id), tokens, 0, 5, 0);
    }
    m.cache_blocks(1, tokens, 5);
    m.free(1);
    ASSERT_TRUE(m.allocate(3, 8));  // demotes request 1's cached block
    EXPECT_EQ(m.stats().num_cached_host_blocks, 1);
    m.cache_blocks(2, tokens, 5);
    EXPECT_EQ(m.stats().num_cached_host_blocks, 0);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 1);
    EXPECT_EQ(m.ref_count(Tier::kDevice, m.block_table(2)[0]), 2);
    m.check_invariants();
    m.free(2);
    m.free(3);
    sim.apply(m.take_pending_copies());
    EXPECT_EQ(prefill(m, sim, 4, tokens), 4);
    EXPECT_EQ(m.stats().prefix_hits_device_tokens, 4);
}

TEST(KvCacheManager, WithoutPrefixCachingItIsAPlainPagedAllocator) {
    KvCacheManager m(config(8, 4, 4, /*prefix_caching=*/false));
    KvSim sim(8, 4, 4);
    EXPECT_EQ(prefill(m, sim, 1, seq(9)), 0);
    m.free(1);
    EXPECT_EQ(prefill(m, sim, 2, seq(9)), 0);
    const KvCacheStats s = m.stats();
    EXPECT_EQ(s.num_cached_device_blocks, 0);
    EXPECT_EQ(s.prefix_queries_tokens, 0);
    EXPECT_EQ(s.num_used_device_blocks, 3);
    EXPECT_DOUBLE_EQ(s.usage(), 3.0 / 8.0);
    m.free(2);
    EXPECT_EQ(m.num_available_blocks(), 8);
}

TEST(KvCacheManager, UsageCountsBlocksHeldByRequestsNotCachedOnes) {
    KvCacheManager m(config(10));
    KvSim sim(10, 0, 4);
    prefill(m, sim, 1, seq(9));
    EXPECT_DOUBLE_EQ(m.stats().usage(), 0.3);
    prefill(m, sim, 2, seq(9));  // shares 2 blocks, adds 1
    EXPECT_DOUBLE_EQ(m.stats().usage(), 0.4);
    m.free(1);
    m.free(2);
    EXPECT_DOUBLE_EQ(m.stats().usage(), 0.0);
    EXPECT_EQ(m.num_available_blocks(), 10);
}

TEST(KvCacheManager, ResetPrefixCacheFreesEveryBlockInBothTiers) {
    KvCacheManager m(config(4, 4));
    KvSim sim(4, 4, 4);
    prefill(m, sim, 1, seq(9));
    m.free(1);
    ASSERT_TRUE(m.allocate(2, 12));  // demotes one
    m.free(2);
    EXPECT_GT(m.stats().num_cached_host_blocks, 0);
    m.reset_prefix_cache();
    const KvCacheStats s = m.stats();
    EXPECT_EQ(s.num_cached_device_blocks, 0);
    EXPECT_EQ(s.num_cached_host_blocks, 0);
    EXPECT_EQ(m.num_available_blocks(), 4);
    for (BlockId b = 0; b < 4; ++b) EXPECT_EQ(m.ref_count(Tier::kHost, b), 0);
    m.check_invariants();
    EXPECT_EQ(m.match_prefix(3, seq(9)), 0);
}

TEST(KvCacheManager, UnknownRequestsAreHarmless) {
    KvCacheManager m(config(4));
    m.free(42);
    EXPECT_TRUE(m.block_table(42).empty());
    EXPECT_EQ(m.num_blocks_needed(42, 5), 2);
    m.cache_blocks(42, seq(8), 8);
    EXPECT_EQ(m.stats().num_cached_device_blocks, 0);
}

TEST(KvCacheManagerDeathTest, MisuseAborts) {
    KvCacheManager m(config(4));
    ASSERT_TRUE(m.allocate(1, 4));
    EXPECT_DEATH(m.match_prefix(1, seq(8)), "already holds blocks");
    EXPECT_DEATH(m.reset_prefix_cache(), "still holding blocks");
    EXPECT_DEATH(m.fork(1, 1), "onto itself");
}

}  // namespace
}  // namespace taco
