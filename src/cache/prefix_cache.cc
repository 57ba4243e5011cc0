#include "cache/prefix_cache.h"

#include <algorithm>

#include <xxhash.h>

#include "core/check.h"

namespace taco {

namespace {

constexpr uint64_t kRootSeed = 0x7461636f2d6c6c6dull;  // "taco-llm"

}  // namespace

uint64_t hash_block_tokens(std::span<const int32_t> block_tokens, uint64_t parent_key) {
    return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), parent_key);
}

PrefixCache::PrefixCache(int64_t block_size, BlockHashFn hash_fn) : block_size_(block_size), hash_fn_(hash_fn) {
    TACO_CHECK_GT(block_size, 0);
    TACO_CHECK(hash_fn != nullptr);
}

void PrefixCache::reserve(int64_t num_nodes) {
    nodes_.reserve(size_t(num_nodes));
    tokens_.reserve(size_t(num_nodes * block_size_));
    children_.reserve(size_t(num_nodes));
    free_nodes_.reserve(size_t(num_nodes));
}

PrefixCache::Node& PrefixCache::at(NodeId node) {
    TACO_CHECK_MSG(node >= 0 && size_t(node) < nodes_.size() && nodes_[size_t(node)].alive, "bad node id {}", node);
    return nodes_[size_t(node)];
}

const PrefixCache::Node& PrefixCache::node(NodeId node) const {
    TACO_CHECK_MSG(node >= 0 && size_t(node) < nodes_.size() && nodes_[size_t(node)].alive, "bad node id {}", node);
    return nodes_[size_t(node)];
}

std::span<const int32_t> PrefixCache::tokens(NodeId id) const {
    TACO_CHECK(!node(id).is_root);
    return std::span<const int32_t>(tokens_).subspan(size_t(id) * size_t(block_size_), size_t(block_size_));
}

NodeId PrefixCache::new_node() {
    NodeId id;
    if (!free_nodes_.empty()) {
        id = free_nodes_.back();
        free_nodes_.pop_back();
    } else {
        id = static_cast<NodeId>(nodes_.size());
        nodes_.emplace_back();
        tokens_.resize(nodes_.size() * size_t(block_size_));
    }
    nodes_[size_t(id)] = Node{};
    nodes_[size_t(id)].alive = true;
    return id;
}

void PrefixCache::free_node(NodeId id) {
    nodes_[size_t(id)].alive = false;
    free_nodes_.push_back(id);
}

NodeId PrefixCache::find_root(uint64_t salt) const {
    auto it = roots_.find(salt);
    return it == roots_.end() ? kNoNode : it->second;
}

NodeId PrefixCache::get_or_add_root(uint64_t salt) {
    NodeId root = find_root(salt);
    if (root != kNoNode) return root;
    root = new_node();
    Node& n = nodes_[size_t(root)];
    n.is_root = true;
    n.salt = salt;
    n.key = XXH3_64bits_withSeed(&salt, sizeof(salt), kRootSeed);
    roots_.emplace(salt, root);
    return root;
}

NodeId PrefixCache::find_child(NodeId parent, std::span<const int32_t> block_tokens) const {
    TACO_CHECK_EQ(int64_t(block_tokens.size()), block_size_);
    const uint64_t key = hash_fn_(block_tokens, node(parent).key);
    const NodeId child = children_.find(parent, key);
    if (child == kNoNode) return kNoNode;
    const std::span<const int32_t> cached = tokens(child);
    return std::equal(cached.begin(), cached.end(), block_tokens.begin()) ? child : kNoNode;
}

void PrefixCache::match(uint64_t salt, std::span<const int32_t> tokens, int64_t max_blocks,
                        std::vector<NodeId>& path) const {
    NodeId parent = find_root(salt);
    if (parent == kNoNode) return;
    const int64_t num_blocks = std::min<int64_t>(max_blocks, int64_t(tokens.size()) / block_size_);
    for (int64_t i = 0; i < num_blocks; ++i) {
        const NodeId child = find_child(parent, tokens.subspan(size_t(i * block_size_), size_t(block_size_)));
        if (child == kNoNode) return;
        path.push_back(child);
        parent = child;
    }
}

void PrefixCache::link_child(NodeId parent, NodeId child) {
    Node& p = at(parent);
    Node& c = at(child);
    c.parent = parent;
    c.prev_sibling = kNoNode;
    c.next_sibling = p.first_child;
    if (p.first_child != kNoNode) at(p.first_child).prev_sibling = child;
    p.first_child = child;
    ++p.num_children;
    if (c.tier == Tier::kDevice) ++p.num_device_children;
    children_.insert(parent, c.key, child);
}

void PrefixCache::unlink_child(NodeId child) {
    Node& c = at(child);
    Node& p = at(c.parent);
    if (c.prev_sibling != kNoNode)
        at(c.prev_sibling).next_sibling = c.next_sibling;
    else
        p.first_child = c.next_sibling;
    if (c.next_sibling != kNoNode) at(c.next_sibling).prev_sibling = c.prev_sibling;
    --p.num_children;
    if (c.tier == Tier::kDevice) --p.num_device_children;
    children_.erase(c.parent, c.key);
    c.parent = c.prev_sibling = c.next_sibling = kNoNode;
}

PrefixCache::InsertResult PrefixCache::insert(NodeId parent, std::span<const int32_t> block_tokens,
                                              BlockId device_block) {
    TACO_CHECK_EQ(int64_t(block_tokens.size()), block_size_);
    const Node& p = node(parent);
    TACO_CHECK_MSG(p.is_root || (p.tier == Tier::kDevice && p.lock_count > 0),
                   "insert under node {} that is not a root or a locked device node", parent);
    const uint64_t key = hash_fn_(block_tokens, p.key);
    const NodeId existing = children_.find(parent, key);
    if (existing != kNoNode) {
        const std::span<const int32_t> cached = tokens(existing);
        if (std::equal(cached.begin(), cached.end(), block_tokens.begin())) return {InsertOutcome::kExisting, existing};
        return {InsertOutcome::kCollision, kNoNode};
    }
    const NodeId id = new_node();
    Node& n = nodes_[size_t(id)];
    n.key = key;
    n.tier = Tier::kDevice;
    n.block = device_block;
    n.lock_count = 1;
    n.last_access = ++clock_;
    std::copy(block_tokens.begin(), block_tokens.end(), tokens_.begin() + ptrdiff_t(size_t(id) * size_t(block_size_)));
    link_child(parent, id);
    ++num_device_nodes_;
    return {InsertOutcome::kInserted, id};
}

void PrefixCache::lru_push_back(LruList& list, NodeId id) {
    Node& n = at(id);
    TACO_CHECK(!n.in_lru);
    n.lru_prev = list.tail;
    n.lru_next = kNoNode;
    if (list.tail != kNoNode)
        at(list.tail).lru_next = id;
    else
        list.head = id;
    list.tail = id;
    n.in_lru = true;
    ++list.size;
}

void PrefixCache::lru_erase(LruList& list, NodeId id) {
    Node& n = at(id);
    TACO_CHECK(n.in_lru);
    if (n.lru_prev != kNoNode)
        at(n.lru_prev).lru_next = n.lru_next;
    else
        list.head = n.lru_next;
    if (n.lru_next != kNoNode)
        at(n.lru_next).lru_prev = n.lru_prev;
    else
        list.tail = n.lru_prev;
    n.lru_prev = n.lru_next = kNoNode;
    n.in_lru = false;
    --list.size;
}

void PrefixCache::lock(NodeId id) {
    Node& n = at(id);
    TACO_CHECK_MSG(!n.is_root && n.tier == Tier::kDevice, "lock of node {} that is not a device node", id);
    if (n.lock_count++ == 0) lru_erase(device_lru_, id);
    n.last_access = ++clock_;
}

void PrefixCache::unlock(NodeId id) {
    Node& n = at(id);
    TACO_CHECK_MSG(n.lock_count > 0, "unlock of unlocked node {}", id);
    if (--n.lock_count > 0) return;
    n.last_access = ++clock_;
    lru_push_back(device_lru_, id);
}

void PrefixCache::demote(NodeId id, BlockId host_block) {
    Node& n = at(id);
    TACO_CHECK_MSG(n.tier == Tier::kDevice && n.lock_count == 0 && n.num_device_children == 0,
                   "demote of node {}: not an unlocked device leaf", id);
    lru_erase(device_lru_, id);
    n.tier = Tier::kHost;
    n.block = host_block;
    --at(n.parent).num_device_children;
    --num_device_nodes_;
    ++num_host_nodes_;
    lru_push_back(host_lru_, id);
}

void PrefixCache::promote(NodeId id, BlockId device_block) {
    Node& n = at(id);
    TACO_CHECK_MSG(n.tier == Tier::kHost, "promote of node {} that is not on the host", id);
    const Node& p = at(n.parent);
    TACO_CHECK_MSG(p.is_root || (p.tier == Tier::kDevice && p.lock_count > 0),
                   "promote of node {} whose parent is not a root or a locked device node", id);
    if (n.in_lru) lru_erase(host_lru_, id);
    n.pinned = false;
    n.tier = Tier::kDevice;
    n.block = device_block;
    n.lock_count = 1;
    n.last_access = ++clock_;
    ++at(n.parent).num_device_children;
    --num_host_nodes_;
    ++num_device_nodes_;
}

void PrefixCache::pin(NodeId id) {
    Node& n = at(id);
    TACO_CHECK_MSG(n.tier == Tier::kHost && !n.pinned, "pin of node {}: not an unpinned host node", id);
    lru_erase(host_lru_, id);
    n.pinned = true;
}

void PrefixCache::unpin(NodeId id) {
    Node& n = at(id);
    TACO_CHECK_MSG(n.tier == Tier::kHost && n.pinned, "unpin of node {}: not a pinned host node", id);
    n.pinned = false;
    n.last_access = ++clock_;
    lru_push_back(host_lru_, id);
}

void PrefixCache::remove(NodeId id) {
    Node& n = at(id);
    TACO_CHECK_MSG(!n.is_root && n.num_children == 0 && n.lock_count == 0 && !n.pinned,
                   "remove of node {}: not an unlocked, unpinned leaf", id);
    lru_erase(list_of(n), id);
    if (n.tier == Tier::kDevice)
        --num_device_nodes_;
    else
        --num_host_nodes_;
    const NodeId parent = n.parent;
    unlink_child(id);
    free_node(id);
    Node& p = at(parent);
    if (p.is_root && p.num_children == 0) {
        roots_.erase(p.salt);
        free_node(parent);
    }
}

void PrefixCache::clear() {
    nodes_.clear();
    tokens_.clear();
    free_nodes_.clear();
    children_.clear();
    roots_.clear();
    device_lru_ = LruList{};
    host_lru_ = LruList{};
    num_device_nodes_ = 0;
    num_host_nodes_ = 0;
}

void PrefixCache::validate_list(const LruList& list, Tier tier) const {
    // Position of each node in the list; every node must come after its descendants, i.e. before its parent.
    std::vector<int64_t> position(nodes_.size(), -1);
    int64_t size = 0;
    NodeId prev = kNoNode;
    for (NodeId id = list.head; id != kNoNode; id = node(id).lru_next) {
        const Node& n = node(id);
        TACO_CHECK(n.in_lru && n.tier == tier && n.lru_prev == prev);
        position[size_t(id)] = size++;
        prev = id;
    }
    TACO_CHECK_EQ(prev, list.tail);
    TACO_CHECK_EQ(size, list.size);
    for (NodeId id = list.head; id != kNoNode; id = node(id).lru_next) {
        const Node& p = node(node(id).parent);
        if (!p.is_root && p.in_lru && p.tier == tier)
            TACO_CHECK_LT(position[size_t(id)], position[size_t(node(id).parent)]);
    }
}

void PrefixCache::validate() const {
    int64_t num_device = 0, num_host = 0, num_alive = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const Node& n = nodes_[i];
        if (!n.alive) continue;
        ++num_alive;
        const NodeId id = NodeId(i);
        int32_t num_children = 0, num_device_children = 0, children_locks = 0;
        NodeId prev = kNoNode;
        for (NodeId c = n.first_child; c != kNoNode; c = node(c).next_sibling) {
            const Node& child = node(c);
            TACO_CHECK(child.parent == id && child.prev_sibling == prev && !child.is_root);
            TACO_CHECK_EQ(children_.find(id, child.key), c);
            ++num_children;
            if (child.tier == Tier::kDevice) ++num_device_children;
            children_locks += child.lock_count;
            // Device nodes first, then host nodes, along every path.
            if (!n.is_root && n.tier == Tier::kHost) TACO_CHECK(child.tier == Tier::kHost);
            prev = c;
        }
        TACO_CHECK_EQ(num_children, n.num_children);
        TACO_CHECK_EQ(num_device_children, n.num_device_children);
        if (n.is_root) {
            TACO_CHECK(n.parent == kNoNode && !n.in_lru && n.num_children > 0);
            auto it = roots_.find(n.salt);
            TACO_CHECK(it != roots_.end() && it->second == id);
            continue;
        }
        TACO_CHECK(n.parent != kNoNode && n.block >= 0);
        TACO_CHECK_GE(n.lock_count, children_locks);
        if (n.tier == Tier::kDevice) {
            ++num_device;
            TACO_CHECK(!n.pinned);
            TACO_CHECK_EQ(n.in_lru, n.lock_count == 0);
        } else {
            ++num_host;
            TACO_CHECK_EQ(n.lock_count, 0);
            TACO_CHECK_EQ(n.in_lru, !n.pinned);
        }
    }
    TACO_CHECK_EQ(num_device, num_device_nodes_);
    TACO_CHECK_EQ(num_host, num_host_nodes_);
    TACO_CHECK_EQ(int64_t(children_.size()) + int64_t(roots_.size()), num_alive);
    validate_list(device_lru_, Tier::kDevice);
    validate_list(host_lru_, Tier::kHost);
}

}  // namespace taco
