#include "cache/prefix_cache.h"

#include <vector>

#include <gtest/gtest.h>

namespace taco {
namespace {

constexpr int64_t kBlockSize = 2;

std::vector<int32_t> block(int32_t a, int32_t b) { return {a, b}; }

// Every block gets its parent's key: siblings always collide.
uint64_t colliding_hash(std::span<const int32_t>, uint64_t parent_key) { return parent_key; }

std::vector<NodeId> match(const PrefixCache& cache, uint64_t salt, const std::vector<int32_t>& tokens) {
    std::vector<NodeId> path;
    cache.match(salt, tokens, int64_t(tokens.size()) / cache.block_size(), path);
    return path;
}

// Inserts the chain of `tokens`' full blocks under `salt` (blocks first_block, first_block + 1, ...), locked once.
std::vector<NodeId> insert_chain(PrefixCache& cache, uint64_t salt, const std::vector<int32_t>& tokens,
                                 BlockId first_block) {
    std::vector<NodeId> path;
    NodeId parent = cache.get_or_add_root(salt);
    for (size_t i = 0; i + kBlockSize <= tokens.size(); i += kBlockSize) {
        const auto r = cache.insert(parent, std::span<const int32_t>(tokens).subspan(i, kBlockSize),
                                    first_block + BlockId(i / kBlockSize));
        EXPECT_EQ(r.outcome, PrefixCache::InsertOutcome::kInserted);
        path.push_back(r.node);
        parent = r.node;
    }
    cache.validate();
    return path;
}

void unlock_chain(PrefixCache& cache, const std::vector<NodeId>& path) {
    for (size_t i = path.size(); i-- > 0;) cache.unlock(path[i]);
    cache.validate();
}

TEST(PrefixCache, MatchFindsTheLongestCachedChain) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> path = insert_chain(cache, 0, {1, 2, 3, 4, 5, 6}, 10);
    EXPECT_EQ(match(cache, 0, {1, 2, 3, 4, 5, 6, 7}), path);
    EXPECT_EQ(match(cache, 0, {1, 2, 3, 4, 9, 9}), std::vector<NodeId>(path.begin(), path.begin() + 2));
    EXPECT_TRUE(match(cache, 0, {2, 1}).empty());
    EXPECT_EQ(cache.node(path[2]).block, 12);
    std::vector<NodeId> limited;
    cache.match(0, std::vector<int32_t>{1, 2, 3, 4, 5, 6}, 1, limited);
    EXPECT_EQ(limited, std::vector<NodeId>{path[0]});
}

TEST(PrefixCache, SaltSeparatesTrees) {
    PrefixCache cache(kBlockSize);
    insert_chain(cache, 7, {1, 2, 3, 4}, 0);
    EXPECT_EQ(match(cache, 7, {1, 2, 3, 4}).size(), 2u);
    EXPECT_TRUE(match(cache, 8, {1, 2, 3, 4}).empty());
    EXPECT_TRUE(match(cache, 0, {1, 2, 3, 4}).empty());
}

TEST(PrefixCache, HashCollisionIsAMissNeverAHit) {
    PrefixCache cache(kBlockSize, &colliding_hash);
    const std::vector<NodeId> path = insert_chain(cache, 0, {1, 2}, 0);
    EXPECT_TRUE(match(cache, 0, {3, 4}).empty());
    const NodeId root = cache.find_root(0);
    const auto r = cache.insert(root, block(3, 4), 5);
    EXPECT_EQ(r.outcome, PrefixCache::InsertOutcome::kCollision);
    EXPECT_EQ(r.node, kNoNode);
    EXPECT_EQ(cache.num_device_nodes(), 1);
    EXPECT_EQ(match(cache, 0, {1, 2}), path);
    cache.validate();
}

TEST(PrefixCache, InsertOfACachedBlockReturnsTheExistingNode) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> path = insert_chain(cache, 0, {1, 2}, 3);
    const auto r = cache.insert(cache.find_root(0), block(1, 2), 9);
    EXPECT_EQ(r.outcome, PrefixCache::InsertOutcome::kExisting);
    EXPECT_EQ(r.node, path[0]);
    EXPECT_EQ(cache.node(path[0]).block, 3);
    EXPECT_EQ(cache.node(path[0]).lock_count, 1);
}

TEST(PrefixCache, LruDeviceIsTheLeastRecentlyUnlockedLeaf) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> a = insert_chain(cache, 0, {1, 1, 2, 2}, 0);
    const std::vector<NodeId> b = insert_chain(cache, 0, {3, 3, 4, 4}, 2);
    EXPECT_EQ(cache.lru_device(), kNoNode);  // all locked
    EXPECT_EQ(cache.num_evictable_device_nodes(), 0);
    unlock_chain(cache, b);
    unlock_chain(cache, a);
    EXPECT_EQ(cache.num_evictable_device_nodes(), 4);
    // b went first; within a chain the leaf goes before its parent.
    EXPECT_EQ(cache.lru_device(), b[1]);
    cache.remove(b[1]);
    EXPECT_EQ(cache.lru_device(), b[0]);
    cache.remove(b[0]);
    EXPECT_EQ(cache.lru_device(), a[1]);
    // Locking a node again takes it out of the LRU list.
    cache.lock(a[0]);
    cache.lock(a[1]);
    EXPECT_EQ(cache.lru_device(), kNoNode);
    cache.validate();
}

TEST(PrefixCache, DemotePromoteMoveNodesBetweenTiers) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> a = insert_chain(cache, 0, {1, 1, 2, 2}, 0);
    unlock_chain(cache, a);
    cache.demote(a[1], 100);
    cache.validate();
    EXPECT_EQ(cache.node(a[1]).tier, Tier::kHost);
    EXPECT_EQ(cache.node(a[1]).block, 100);
    EXPECT_EQ(cache.lru_device(), a[0]);  // no device children left
    EXPECT_EQ(cache.lru_host(), a[1]);
    cache.demote(a[0], 101);
    cache.validate();
    EXPECT_EQ(cache.num_device_nodes(), 0);
    EXPECT_EQ(cache.num_host_nodes(), 2);
    EXPECT_EQ(cache.lru_host(), a[1]);            // the leaf first
    EXPECT_EQ(match(cache, 0, {1, 1, 2, 2}), a);  // host nodes still match

    cache.pin(a[0]);
    cache.pin(a[1]);
    EXPECT_EQ(cache.lru_host(), kNoNode);
    cache.promote(a[0], 7);
    cache.validate();
    EXPECT_EQ(cache.node(a[0]).tier, Tier::kDevice);
    EXPECT_EQ(cache.node(a[0]).block, 7);
    EXPECT_EQ(cache.node(a[0]).lock_count, 1);
    cache.unpin(a[1]);
    EXPECT_EQ(cache.lru_host(), a[1]);
    cache.validate();
}

TEST(PrefixCache, RemovingTheLastChildDropsTheRoot) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> a = insert_chain(cache, 5, {1, 1}, 0);
    unlock_chain(cache, a);
    cache.remove(a[0]);
    EXPECT_EQ(cache.find_root(5), kNoNode);
    EXPECT_EQ(cache.num_device_nodes(), 0);
    cache.validate();
    // Slots are reused.
    const std::vector<NodeId> b = insert_chain(cache, 5, {2, 2}, 0);
    EXPECT_EQ(match(cache, 5, {2, 2}), b);
}

TEST(PrefixCacheDeathTest, MisuseAborts) {
    PrefixCache cache(kBlockSize);
    const std::vector<NodeId> a = insert_chain(cache, 0, {1, 1, 2, 2}, 0);
    EXPECT_DEATH(cache.remove(a[0]), "not an unlocked, unpinned leaf");
    EXPECT_DEATH(cache.demote(a[1], 3), "not an unlocked device leaf");
    cache.unlock(a[1]);
    EXPECT_DEATH(cache.unlock(a[1]), "unlock of unlocked");
    EXPECT_DEATH(cache.pin(a[1]), "not an unpinned host node");
}

}  // namespace
}  // namespace taco
