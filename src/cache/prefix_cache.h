// PrefixCache: the prefix tree at block granularity (ARCHITECTURE.md "Key contracts"; SGLang's radix node with
// vLLM's chained block hashes as keys). A node is one full block of block_size tokens; its path from the root
// spells the token prefix whose KV the block holds. There is one root per salt, so caches with different salts
// (adapters) never meet. The tree only bookkeeps: KvCacheManager owns the allocators, holds one reference on the
// block of every node, and queues the copies.
//
// Invariants (validate() checks them all):
//   - tiers along a root-to-leaf path: device nodes, then host nodes (a host node has only host children);
//   - lock_count = number of requests whose block chain runs through the node; a request locks a whole chain from
//     its root, so parent.lock_count >= sum of the children's lock counts, and locked nodes are on the device;
//   - unlocked device nodes sit in the device LRU list, unpinned host nodes in the host LRU list, others in none;
//     both lists run from least to most recently used and every node comes after all its descendants in its
//     list, so each head is an evictable leaf of its tier (no device children / no children at all).
// Nodes enter the device list when their last lock goes (that is their last access), so eviction is O(1).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/block.h"
#include "cache/child_index.h"

namespace taco {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// XXH3-64 of the tokens' bytes, seeded with the parent's key.
uint64_t hash_block_tokens(std::span<const int32_t> block_tokens, uint64_t parent_key);

class PrefixCache {
public:
    struct Node {
        uint64_t key = 0;         // chained hash; a root's is derived from its salt
        uint64_t salt = 0;        // roots only
        NodeId parent = kNoNode;  // kNoNode for a root
        NodeId first_child = kNoNode;
        NodeId next_sibling = kNoNode;
        NodeId prev_sibling = kNoNode;
        int32_t num_children = 0;
        int32_t num_device_children = 0;
        Tier tier = Tier::kDevice;
        BlockId block = -1;  // in `tier`'s allocator; -1 for a root
        int32_t lock_count = 0;
        uint64_t last_access = 0;  // logical clock: set when locked and when the last lock goes
        NodeId lru_prev = kNoNode;
        NodeId lru_next = kNoNode;
        bool in_lru = false;
        bool pinned = false;
        bool is_root = false;
        bool alive = false;
    };

    enum class InsertOutcome { kInserted, kExisting, kCollision };
    struct InsertResult {
        InsertOutcome outcome;
        NodeId node;  // the new or existing node; kNoNode on a collision
    };

    explicit PrefixCache(int64_t block_size, BlockHashFn hash_fn = &hash_block_tokens);

    int64_t block_size() const { return block_size_; }
    void reserve(int64_t num_nodes);

    // The root for `salt`, or kNoNode when nothing is cached under it.
    NodeId find_root(uint64_t salt) const;
    NodeId get_or_add_root(uint64_t salt);

    // The child of `parent` holding exactly `block_tokens` (block_size of them), or kNoNode.
    NodeId find_child(NodeId parent, std::span<const int32_t> block_tokens) const;
    // Appends to `path` the longest chain of cached blocks spelling a prefix of `tokens`, at most `max_blocks`,
    // root side first. Locks nothing.
    void match(uint64_t salt, std::span<const int32_t> tokens, int64_t max_blocks, std::vector<NodeId>& path) const;

    // Adds a device node under `parent` (a root or a locked device node) for `block_tokens` held in `device_block`,
    // locked once for the caller. Changes nothing when the child exists (kExisting) or when a different block has
    // the same key (kCollision).
    InsertResult insert(NodeId parent, std::span<const int32_t> block_tokens, BlockId device_block);

    void lock(NodeId node);    // device nodes only
    void unlock(NodeId node);  // the last unlock makes the node most recently used

    // Least recently used evictable node of each tier (kNoNode when none): an unlocked device node without device
    // children; an unpinned host node without children.
    NodeId lru_device() const { return device_lru_.head; }
    NodeId lru_host() const { return host_lru_.head; }

    // Device -> host: `node` is an unlocked device node without device children; it becomes most recently used
    // among host nodes.
    void demote(NodeId node, BlockId host_block);
    // Host -> device: `node` is a host node whose parent is a root or a locked device node; it becomes a device
    // node holding `device_block`, locked once for the caller.
    void promote(NodeId node, BlockId device_block);
    // Pinned host nodes leave the host LRU list so that they cannot be evicted (while being promoted); unpin puts
    // a node back as most recently used (unpin children before parents).
    void pin(NodeId node);
    void unpin(NodeId node);

    // Removes an unlocked node without children (its block is the caller's to release). A root left without
    // children goes too.
    void remove(NodeId node);
    // Forgets every node (the caller has released their blocks).
    void clear();

    const Node& node(NodeId node) const;
    std::span<const int32_t> tokens(NodeId node) const;
    int64_t num_device_nodes() const { return num_device_nodes_; }
    int64_t num_host_nodes() const { return num_host_nodes_; }
    // Device nodes that eviction could free: exactly the unlocked ones (locks cover whole chains, so every
    // unlocked device node becomes a leaf once its unlocked descendants are gone).
    int64_t num_evictable_device_nodes() const { return device_lru_.size; }

    template <class F>  // f(NodeId, const Node&) for every non-root node
    void for_each_node(F&& f) const {
        for (size_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].alive && !nodes_[i].is_root) f(static_cast<NodeId>(i), nodes_[i]);
    }

    // Aborts (TACO_CHECK) when an invariant of the header comment is broken. O(nodes); for tests.
    void validate() const;

private:
    struct LruList {
        NodeId head = kNoNode;
        NodeId tail = kNoNode;
        int64_t size = 0;
    };

    Node& at(NodeId node);
    NodeId new_node();
    void free_node(NodeId node);
    void link_child(NodeId parent, NodeId child);
    void unlink_child(NodeId child);
    void lru_push_back(LruList& list, NodeId node);
    void lru_erase(LruList& list, NodeId node);
    LruList& list_of(const Node& n) { return n.tier == Tier::kDevice ? device_lru_ : host_lru_; }
    void validate_list(const LruList& list, Tier tier) const;

    int64_t block_size_;
    BlockHashFn hash_fn_;
    std::vector<Node> nodes_;
    std::vector<int32_t> tokens_;  // [nodes_.size(), block_size]
    std::vector<NodeId> free_nodes_;
    ChildIndex children_;                         // (parent, key) -> child
    std::unordered_map<uint64_t, NodeId> roots_;  // salt -> root
    LruList device_lru_;
    LruList host_lru_;
    int64_t num_device_nodes_ = 0;
    int64_t num_host_nodes_ = 0;
    uint64_t clock_ = 0;
};

}  // namespace taco
