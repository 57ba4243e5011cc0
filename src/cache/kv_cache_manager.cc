#include "cache/kv_cache_manager.h"

#include <algorithm>
#include <deque>

#include "cache/block_allocator.h"
#include "cache/prefix_cache.h"
#include "core/check.h"

namespace taco {

Status KvCacheConfig::validate() const {
    if (num_device_blocks <= 0) return error("kv cache: num_device_blocks must be > 0 (got {})", num_device_blocks);
    if (num_device_blocks > INT32_MAX) return error("kv cache: num_device_blocks {} too large", num_device_blocks);
    if (num_host_blocks < 0) return error("kv cache: num_host_blocks must be >= 0 (got {})", num_host_blocks);
    if (num_host_blocks > INT32_MAX) return error("kv cache: num_host_blocks {} too large", num_host_blocks);
    if (block_size <= 0 || (block_size & (block_size - 1)) != 0 || block_size > 4096)
        return error("kv cache: block_size must be a power of two in [1, 4096] (got {})", block_size);
    return Status::ok();
}

namespace {

// One request's view: its block table and, parallel to the table's first path.size() blocks, the chain of tree
// nodes it locks. path[i] holds the same tokens as table[i] but not necessarily the same block: when another
// request published an identical block first, the request keeps computing into its own (see cache_blocks).
struct RequestState {
    std::vector<BlockId> table;
    std::vector<NodeId> path;
    int64_t num_tokens = 0;  // largest num_total_tokens allocated: tokens [0, num_tokens) are computed next step
};

}  // namespace

struct KvCacheManager::Impl {
    KvCacheConfig config;
    BlockAllocator device;
    BlockAllocator host;
    PrefixCache tree;
    std::unordered_map<RequestId, int32_t> slot_of;  // request -> index into states
    std::deque<RequestState> states;  // stable addresses (block_table hands out references); slots are reused
    std::vector<int32_t> free_slots;
    std::vector<int32_t> request_refs;  // [num_device_blocks]: how many requests hold each device block
    int64_t num_used = 0;               // device blocks with request_refs > 0
    std::vector<BlockCopy> pending;
    std::vector<NodeId> scratch;
    KvCacheStats counters;  // cumulative fields only

    Impl(const KvCacheConfig& c, BlockHashFn hash_fn)
        : config(c), device(c.num_device_blocks), host(c.num_host_blocks), tree(c.block_size, hash_fn) {
        const Status status = c.validate();
        TACO_CHECK_MSG(status.is_ok(), "{}", status.message());
        tree.reserve(c.num_device_blocks + c.num_host_blocks + 8);
        request_refs.assign(size_t(c.num_device_blocks), 0);
    }

    int64_t blocks_for(int64_t num_tokens) const { return (num_tokens + config.block_size - 1) / config.block_size; }

    RequestState* find(RequestId request) {
        auto it = slot_of.find(request);
        return it == slot_of.end() ? nullptr : &states[size_t(it->second)];
    }
    const RequestState* find(RequestId request) const {
        auto it = slot_of.find(request);
        return it == slot_of.end() ? nullptr : &states[size_t(it->second)];
    }
    RequestState& get_or_add(RequestId request) {
        if (RequestState* s = find(request)) return *s;
        int32_t slot;
        if (!free_slots.empty()) {
            slot = free_slots.back();
            free_slots.pop_back();
        } else {
            slot = int32_t(states.size());
            states.emplace_back();
        }
        slot_of.emplace(request, slot);
        return states[size_t(slot)];
    }

    // The partial last block the next allocation writes into, when other holders share it.
    bool needs_cow(const RequestState& s, int64_t num_total_tokens) const {
        if (num_total_tokens <= s.num_tokens || s.num_tokens % config.block_size == 0) return false;
        const size_t index = size_t(s.num_tokens / config.block_size);
        return index < s.table.size() && device.ref_count(s.table[index]) > 1;
    }
    int64_t blocks_needed(const RequestState* s, int64_t num_total_tokens) const {
        if (s == nullptr) return blocks_for(num_total_tokens);
        const int64_t num_new = std::max<int64_t>(0, blocks_for(num_total_tokens) - int64_t(s->table.size()));
        return num_new + (needs_cow(*s, num_total_tokens) ? 1 : 0);
    }
    int64_t available() const { return device.num_free() + tree.num_evictable_device_nodes(); }

    void hold(BlockId block) {  // one more request holds `block`
        if (request_refs[size_t(block)]++ == 0) ++num_used;
    }
    void unhold(BlockId block) {  // a request lets go of `block`
        TACO_CHECK_GT(request_refs[size_t(block)], 0);
        if (--request_refs[size_t(block)] == 0) --num_used;
        device.release(block);
    }

    // Frees the device block of the least recently used evictable node: demoted to the host tier when it has or
    // can make room (its copy queued first, so it runs before the block's next owner writes it), else dropped.
    void evict_one_device_block() {
        const NodeId victim = tree.lru_device();
        TACO_CHECK_MSG(victim != kNoNode, "device tier exhausted: nothing evictable");
        const BlockId block = tree.node(victim).block;
        TACO_CHECK_EQ(device.ref_count(block), 1);  // unlocked: only the tree holds it
        std::optional<BlockId> host_block;
        if (host.num_blocks() > 0) {
            host_block = host.allocate();
            while (!host_block && tree.lru_host() != kNoNode) {
                const NodeId dropped = tree.lru_host();
                TACO_CHECK(host.release(tree.node(dropped).block));
                tree.remove(dropped);
                host_block = host.allocate();
            }
        }
        if (host_block) {
            pending.push_back(BlockCopy{Tier::kDevice, block, Tier::kHost, *host_block});
            tree.demote(victim, *host_block);
            ++counters.num_demotions;
        } else {
            // No host tier, or every host node is pinned by the promotion under way: the victim then has no
            // children at all (its host children would be unpinned host nodes), so it simply goes.
            tree.remove(victim);
        }
        TACO_CHECK(device.release(block));
    }

    // A free device block with ref count 1, evicting when the free list is empty. The caller checked available().
    BlockId take_device_block() {
        if (device.num_free() == 0) evict_one_device_block();
        const std::optional<BlockId> block = device.allocate();
        TACO_CHECK(block.has_value());
        return *block;
    }

    void release_request(RequestState& s) {
        for (const BlockId b : s.table) unhold(b);
        for (size_t i = s.path.size(); i-- > 0;) tree.unlock(s.path[i]);  // leaves first: LRU order
        s.table.clear();
        s.path.clear();
        s.num_tokens = 0;
    }
};

KvCacheManager::KvCacheManager(const KvCacheConfig& config) : KvCacheManager(config, &hash_block_tokens) {}
KvCacheManager::KvCacheManager(const KvCacheConfig& config, BlockHashFn hash_fn)
    : impl_(std::make_unique<Impl>(config, hash_fn)) {}
KvCacheManager::~KvCacheManager() = default;

int64_t KvCacheManager::block_size() const { return impl_->config.block_size; }

int64_t KvCacheManager::match_prefix(RequestId request, std::span<const int32_t> tokens, uint64_t salt) {
    Impl& m = *impl_;
    if (!m.config.enable_prefix_caching || tokens.size() <= 1) return 0;
    RequestState& s = m.get_or_add(request);
    TACO_CHECK_MSG(s.table.empty(), "match_prefix for request {} that already holds blocks", request);
    m.counters.prefix_queries_tokens += int64_t(tokens.size());
    const int64_t max_blocks = (int64_t(tokens.size()) - 1) / m.config.block_size;
    std::vector<NodeId>& path = m.scratch;
    path.clear();
    m.tree.match(salt, tokens, max_blocks, path);

    size_t num_device = 0;
    while (num_device < path.size() && m.tree.node(path[num_device]).tier == Tier::kDevice) {
        const NodeId n = path[num_device++];
        m.tree.lock(n);
        const BlockId b = m.tree.node(n).block;
        m.device.add_ref(b);
        m.hold(b);
        s.table.push_back(b);
        s.path.push_back(n);
    }
    // The rest is on the host. Pin it so that demotions made to free device blocks cannot evict it, promote as
    // much as the device tier can take, unpin what is left.
    for (size_t i = num_device; i < path.size(); ++i) m.tree.pin(path[i]);
    const size_t num_promoted = std::min(path.size() - num_device, size_t(std::max<int64_t>(0, m.available())));
    for (size_t i = num_device; i < num_device + num_promoted; ++i) {
        const NodeId n = path[i];
        const BlockId host_block = m.tree.node(n).block;
        const BlockId b = m.take_device_block();  // any demotion it makes is queued before the promotion
        m.pending.push_back(BlockCopy{Tier::kHost, host_block, Tier::kDevice, b});
        TACO_CHECK(m.host.release(host_block));  // reused only by copies queued after the one reading it
        m.tree.promote(n, b);                    // the tree's reference is the allocation's
        m.device.add_ref(b);
        m.hold(b);
        s.table.push_back(b);
        s.path.push_back(n);
        ++m.counters.num_promotions;
    }
    for (size_t i = path.size(); i-- > num_device + num_promoted;) m.tree.unpin(path[i]);

    const int64_t bs = m.config.block_size;
    m.counters.prefix_hits_device_tokens += int64_t(num_device) * bs;
    m.counters.prefix_hits_host_tokens += int64_t(num_promoted) * bs;
    s.num_tokens = int64_t(s.table.size()) * bs;
    return s.num_tokens;
}

bool KvCacheManager::allocate(RequestId request, int64_t num_total_tokens) {
    Impl& m = *impl_;
    TACO_CHECK_GE(num_total_tokens, 0);
    RequestState& s = m.get_or_add(request);
    const int64_t need = m.blocks_needed(&s, num_total_tokens);
    if (need > m.available()) return false;
    if (m.needs_cow(s, num_total_tokens)) {
        const size_t index = size_t(s.num_tokens / m.config.block_size);
        const BlockId shared = s.table[index];
        const BlockId own = m.take_device_block();
        m.hold(own);
        m.pending.push_back(BlockCopy{Tier::kDevice, shared, Tier::kDevice, own});
        m.unhold(shared);
        s.table[index] = own;
        ++m.counters.num_cow_copies;
    }
    for (int64_t i = int64_t(s.table.size()); i < m.blocks_for(num_total_tokens); ++i) {
        const BlockId b = m.take_device_block();
        m.hold(b);
        s.table.push_back(b);
    }
    s.num_tokens = std::max(s.num_tokens, num_total_tokens);
    return true;
}

void KvCacheManager::cache_blocks(RequestId request, std::span<const int32_t> tokens, int64_t num_computed_tokens,
                                  uint64_t salt) {
    Impl& m = *impl_;
    if (!m.config.enable_prefix_caching) return;
    RequestState* s = m.find(request);
    if (s == nullptr) return;
    const int64_t bs = m.config.block_size;
    const size_t num_full =
        std::min(size_t(std::clamp<int64_t>(num_computed_tokens, 0, int64_t(tokens.size())) / bs), s->table.size());
    if (s->path.size() >= num_full) return;
    NodeId parent = s->path.empty() ? m.tree.get_or_add_root(salt) : s->path.back();
    for (size_t i = s->path.size(); i < num_full; ++i) {
        const std::span<const int32_t> block_tokens = tokens.subspan(i * size_t(bs), size_t(bs));
        const BlockId b = s->table[i];
        const PrefixCache::InsertResult r = m.tree.insert(parent, block_tokens, b);
        switch (r.outcome) {
            case PrefixCache::InsertOutcome::kInserted: m.device.add_ref(b); break;
            case PrefixCache::InsertOutcome::kExisting:
                if (m.tree.node(r.node).tier == Tier::kDevice) {
                    // Published by someone else first: the tree keeps its block, this request keeps computing in
                    // its own and locks the tree's node so that its chain stays on the device.
                    m.tree.lock(r.node);
                } else {
                    // A demoted copy of the same tokens: this request's block replaces it, no copy needed.
                    TACO_CHECK(m.host.release(m.tree.node(r.node).block));
                    m.tree.promote(r.node, b);
                    m.device.add_ref(b);
                }
                break;
            case PrefixCache::InsertOutcome::kCollision:
                return;  // a different block owns this key: this request's later blocks stay private
        }
        s->path.push_back(r.node);
        parent = r.node;
    }
}

void KvCacheManager::free(RequestId request) {
    Impl& m = *impl_;
    auto it = m.slot_of.find(request);
    if (it == m.slot_of.end()) return;
    m.release_request(m.states[size_t(it->second)]);
    m.free_slots.push_back(it->second);
    m.slot_of.erase(it);
}

void KvCacheManager::fork(RequestId parent, RequestId child) {
    Impl& m = *impl_;
    TACO_CHECK_MSG(parent != child, "fork of request {} onto itself", parent);
    const RequestState* p = m.find(parent);
    TACO_CHECK_MSG(p == nullptr || m.find(child) == nullptr || m.find(child)->table.empty(),
                   "fork onto request {} that already holds blocks", child);
    RequestState& c = m.get_or_add(child);
    if (p == nullptr) return;
    c.table = p->table;
    c.path = p->path;
    c.num_tokens = p->num_tokens;
    for (const BlockId b : c.table) {
        m.device.add_ref(b);
        m.hold(b);
    }
    for (const NodeId n : c.path) m.tree.lock(n);
}

const std::vector<BlockId>& KvCacheManager::block_table(RequestId request) const {
    static const std::vector<BlockId> kEmpty;
    const RequestState* s = impl_->find(request);
    return s == nullptr ? kEmpty : s->table;
}

std::vector<BlockCopy> KvCacheManager::take_pending_copies() {
    std::vector<BlockCopy> copies;
    copies.swap(impl_->pending);
    return copies;
}

int64_t KvCacheManager::num_blocks_needed(RequestId request, int64_t num_total_tokens) const {
    return impl_->blocks_needed(impl_->find(request), num_total_tokens);
}

int64_t KvCacheManager::num_available_blocks() const { return impl_->available(); }

KvCacheStats KvCacheManager::stats() const {
    const Impl& m = *impl_;
    KvCacheStats s = m.counters;
    s.num_device_blocks = m.config.num_device_blocks;
    s.num_used_device_blocks = m.num_used;
    s.num_cached_device_blocks = m.tree.num_device_nodes();
    s.num_cached_host_blocks = m.tree.num_host_nodes();
    return s;
}

void KvCacheManager::reset_prefix_cache() {
    Impl& m = *impl_;
    TACO_CHECK_MSG(m.slot_of.empty(), "reset_prefix_cache with {} requests still holding blocks", m.slot_of.size());
    m.tree.for_each_node([&](NodeId, const PrefixCache::Node& n) {
        BlockAllocator& allocator = n.tier == Tier::kDevice ? m.device : m.host;
        TACO_CHECK(allocator.release(n.block));
    });
    m.tree.clear();
}

int32_t KvCacheManager::ref_count(Tier tier, BlockId block) const {
    return tier == Tier::kDevice ? impl_->device.ref_count(block) : impl_->host.ref_count(block);
}

void KvCacheManager::check_invariants() const {
    const Impl& m = *impl_;
    m.tree.validate();
    std::vector<int32_t> device_refs(size_t(m.device.num_blocks()), 0);
    std::vector<int32_t> request_refs(size_t(m.device.num_blocks()), 0);
    std::vector<int32_t> host_refs(size_t(m.host.num_blocks()), 0);
    std::unordered_map<NodeId, int32_t> path_locks;
    m.tree.for_each_node([&](NodeId, const PrefixCache::Node& n) {
        std::vector<int32_t>& refs = n.tier == Tier::kDevice ? device_refs : host_refs;
        TACO_CHECK_MSG(refs[size_t(n.block)] == 0, "block {} in two tree nodes", n.block);
        refs[size_t(n.block)] = 1;
    });
    for (const auto& [id, slot] : m.slot_of) {
        const RequestState& s = m.states[size_t(slot)];
        TACO_CHECK_LE(s.path.size(), s.table.size());
        TACO_CHECK_EQ(int64_t(s.table.size()), m.blocks_for(s.num_tokens));
        for (const BlockId b : s.table) {
            ++request_refs[size_t(b)];
            ++device_refs[size_t(b)];
        }
        std::vector<BlockId> sorted = s.table;
        std::sort(sorted.begin(), sorted.end());
        TACO_CHECK_MSG(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                       "request {} holds a block twice", id);
        for (size_t i = 0; i < s.path.size(); ++i) {
            const PrefixCache::Node& n = m.tree.node(s.path[i]);
            TACO_CHECK(n.tier == Tier::kDevice);
            if (i == 0)
                TACO_CHECK(m.tree.node(n.parent).is_root);
            else
                TACO_CHECK_EQ(n.parent, s.path[i - 1]);
            ++path_locks[s.path[i]];
        }
    }
    int64_t num_used = 0;
    for (size_t b = 0; b < device_refs.size(); ++b) {
        TACO_CHECK_MSG(device_refs[b] == m.device.ref_count(BlockId(b)), "device block {}: ref count {}, holders {}", b,
                       m.device.ref_count(BlockId(b)), device_refs[b]);
        TACO_CHECK_EQ(request_refs[b], m.request_refs[b]);
        if (request_refs[b] > 0) ++num_used;
    }
    TACO_CHECK_EQ(num_used, m.num_used);
    for (size_t b = 0; b < host_refs.size(); ++b) TACO_CHECK_EQ(host_refs[b], m.host.ref_count(BlockId(b)));
    m.tree.for_each_node([&](NodeId id, const PrefixCache::Node& n) {
        auto it = path_locks.find(id);
        TACO_CHECK_EQ(n.lock_count, it == path_locks.end() ? 0 : it->second);
    });
    TACO_CHECK_EQ(m.device.num_free() +
                      int64_t(std::count_if(device_refs.begin(), device_refs.end(), [](int32_t r) { return r > 0; })),
                  m.device.num_blocks());
    TACO_CHECK_EQ(m.host.num_free() + m.tree.num_host_nodes(), m.host.num_blocks());
}

}  // namespace taco
