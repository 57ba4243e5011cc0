// KvCacheManager: the only cache object the scheduler sees (ARCHITECTURE.md, "Key contracts"). It owns the
// device-tier BlockAllocator, the host-tier BlockAllocator and the PrefixCache, and keeps each request's block
// table. Running out of blocks is a return value (the scheduler preempts), never an exception.
//
// Life of a request's blocks:
//   match_prefix (first scheduling) -> allocate (every step, for the tokens about to be computed)
//   -> cache_blocks (after tokens are computed: full blocks join the prefix tree) -> free (finish/abort/preempt).
// A block used by the prefix tree and by no request stays cached (evictable). When the device tier needs blocks,
// the least recently used unlocked leaves are evicted: demoted to the host tier (a device->host copy) while it
// has room, else dropped. A prefix hit in the host tier is promoted back (a host->device copy).
// Copy-on-write (n > 1): fork() shares all blocks of a request with a new one; whoever then writes into a shared,
// partially filled block first gets a private copy (a device->device copy).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/block.h"
#include "core/status.h"

namespace taco {

struct KvCacheConfig {
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = 0;  // 0: no host tier
    int64_t block_size = 16;      // tokens per block, a power of two
    bool enable_prefix_caching = true;
    Status validate() const;
};

struct KvCacheStats {
    int64_t num_device_blocks = 0;
    int64_t num_used_device_blocks = 0;    // referenced by at least one request
    int64_t num_cached_device_blocks = 0;  // in the prefix tree on the device tier
    int64_t num_cached_host_blocks = 0;
    int64_t prefix_queries_tokens = 0;  // tokens looked up by match_prefix (cumulative)
    int64_t prefix_hits_device_tokens = 0;
    int64_t prefix_hits_host_tokens = 0;
    int64_t num_demotions = 0;   // device -> host copies
    int64_t num_promotions = 0;  // host -> device copies
    int64_t num_cow_copies = 0;
    double usage() const { return num_device_blocks ? double(num_used_device_blocks) / double(num_device_blocks) : 0; }
};

class BlockAllocator;
class PrefixCache;

class KvCacheManager {
public:
    explicit KvCacheManager(const KvCacheConfig& config);
    // `hash_fn` replaces the prefix tree's block hash (tests force collisions with it).
    KvCacheManager(const KvCacheConfig& config, BlockHashFn hash_fn);
    ~KvCacheManager();
    KvCacheManager(const KvCacheManager&) = delete;
    KvCacheManager& operator=(const KvCacheManager&) = delete;

    int64_t block_size() const;

    // First scheduling of a request (or after preemption): looks up `tokens` (the whole known sequence) in the
    // prefix tree, `salt` separating unrelated caches (e.g. adapters). Returns the number of leading tokens whose
    // KV is cached: a multiple of block_size and at most tokens.size() - 1 (the last token is always computed so
    // that it yields logits). The matched blocks become the start of the request's block table and are locked.
    // Host-tier hits are promoted (copies queued); if the device tier cannot take them, the match stops there.
    int64_t match_prefix(RequestId request, std::span<const int32_t> tokens, uint64_t salt = 0);

    // Makes room for the request to hold `num_total_tokens` tokens (its computed tokens plus those about to be
    // computed), evicting cached blocks if needed, and copying shared partial blocks it will write into.
    // Returns false and changes nothing when the device tier cannot provide the blocks. Unknown requests are
    // added. The tokens covered by the request's previous allocations (or its match) count as computed: this
    // step writes from there on, which decides whether its last, partially filled block must be copied first.
    bool allocate(RequestId request, int64_t num_total_tokens);

    // After `num_computed_tokens` of `tokens` have KV in the cache: every full block not yet in the prefix
    // tree joins it (no-op when prefix caching is off). When an identical block is already in the tree (another
    // request computed the same prefix at the same time), the tree keeps its block and this request keeps using
    // its own; later blocks still join the tree under the shared chain.
    void cache_blocks(RequestId request, std::span<const int32_t> tokens, int64_t num_computed_tokens,
                      uint64_t salt = 0);

    // Releases the request's blocks (they stay cached if in the prefix tree). Unknown ids are ignored.
    void free(RequestId request);

    // `child` (unknown so far) gets the same block table as `parent`, sharing every block (copy-on-write).
    void fork(RequestId parent, RequestId child);

    // Physical device block ids of the request, logical order. Empty for an unknown request. The reference
    // stays valid until the request is freed.
    const std::vector<BlockId>& block_table(RequestId request) const;

    // The copies queued since the last call, in the order they must run.
    std::vector<BlockCopy> take_pending_copies();

    // Blocks a request of `num_total_tokens` needs beyond what it has (for the scheduler's admission check).
    int64_t num_blocks_needed(RequestId request, int64_t num_total_tokens) const;
    // Device blocks that could be handed out now: free plus evictable.
    int64_t num_available_blocks() const;

    KvCacheStats stats() const;

    // Drops every cached block (e.g. after a weight reload). Requests must all have been freed.
    void reset_prefix_cache();

    // For tests and debugging: the reference count of a block (requests holding it plus the prefix tree), and a
    // full consistency check (ref counts = holders, no block in two places, tree invariants) that aborts
    // through TACO_CHECK when broken. O(blocks + requests' blocks).
    int32_t ref_count(Tier tier, BlockId block) const;
    void check_invariants() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace taco
