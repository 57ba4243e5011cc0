// ChildIndex: (parent node, block key) -> child node, the prefix tree's edge table. Open addressing with linear
// probing and backward-shift deletion in one flat array, so lookups touch one or two cache lines and inserts do
// not allocate (the table doubles when half full). Keys may be degenerate (tests force collisions), so the slot
// comes from a mix of key and parent.
#pragma once

#include <cstdint>
#include <vector>

#include "core/check.h"

namespace taco {

class ChildIndex {
public:
    using NodeId = int32_t;
    static constexpr NodeId kNone = -1;

    explicit ChildIndex(size_t capacity = 16) { rebuild(capacity); }

    void reserve(size_t num_entries) {
        if (num_entries * 2 > slots_.size()) rebuild(num_entries * 2);
    }

    NodeId find(NodeId parent, uint64_t key) const {
        for (size_t i = slot_of(parent, key);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.child == kNone) return kNone;
            if (s.parent == parent && s.key == key) return s.child;
        }
    }

    // The edge must not exist yet.
    void insert(NodeId parent, uint64_t key, NodeId child) {
        TACO_CHECK(child != kNone);
        if ((size_ + 1) * 2 > slots_.size()) rebuild(slots_.size() * 2);
        size_t i = slot_of(parent, key);
        while (slots_[i].child != kNone) {
            TACO_CHECK(!(slots_[i].parent == parent && slots_[i].key == key));
            i = (i + 1) & mask_;
        }
        slots_[i] = Slot{key, parent, child};
        ++size_;
    }

    // The edge must exist.
    void erase(NodeId parent, uint64_t key) {
        size_t i = slot_of(parent, key);
        while (!(slots_[i].parent == parent && slots_[i].key == key)) {
            TACO_CHECK(slots_[i].child != kNone);
            i = (i + 1) & mask_;
        }
        // Backward shift: move later entries of the probe run into the hole when their home slot allows it.
        for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
            if (slots_[j].child == kNone) break;
            const size_t home = slot_of(slots_[j].parent, slots_[j].key);
            // j may move to i when home is not cyclically in (i, j].
            if (((j - home) & mask_) >= ((j - i) & mask_)) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{};
        --size_;
    }

    size_t size() const { return size_; }
    void clear() {
        slots_.assign(slots_.size(), Slot{});
        size_ = 0;
    }

private:
    struct Slot {
        uint64_t key = 0;
        NodeId parent = kNone;
        NodeId child = kNone;  // kNone: empty slot
    };

    size_t slot_of(NodeId parent, uint64_t key) const {
        uint64_t h = key ^ (uint64_t(uint32_t(parent)) * 0x9E3779B97F4A7C15ull);
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        return size_t(h) & mask_;
    }

    void rebuild(size_t capacity) {
        size_t n = 16;
        while (n < capacity) n *= 2;
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(n, Slot{});
        mask_ = n - 1;
        size_ = 0;
        for (const Slot& s : old)
            if (s.child != kNone) insert(s.parent, s.key, s.child);
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace taco
