// Open-addressing hash maps for the BPE hot paths (vocabulary lookup per symbol, merge lookup per adjacent pair):
// built once, read-only afterwards, several times faster to build and probe than std::unordered_map.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taco {

inline uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t v;
        std::memcpy(&v, s.data() + i, 8);
        h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

inline uint64_t hash_u64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// token string -> id. Strings live in one arena; a later insert of an existing string replaces its id.
class StringIdMap {
public:
    void reserve(size_t n) {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        slots_.assign(cap, Slot{0, kEmpty, 0, 0, 0});
        entries_.reserve(n);
    }
    // Returns the index of the entry (stable; usable with key()).
    uint32_t insert(std::string_view key, int32_t id) {
        if ((entries_.size() + 1) * 2 > slots_.size()) grow();
        size_t mask = slots_.size() - 1;
        uint64_t h = hash_bytes(key);
        auto tag = static_cast<uint32_t>(h >> 32);
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            Slot& slot = slots_[i];
            if (slot.entry == kEmpty) {
                slot = {tag, static_cast<uint32_t>(entries_.size()), static_cast<uint32_t>(arena_.size()),
                        static_cast<uint32_t>(key.size()), id};
                entries_.push_back(static_cast<uint32_t>(i));
                arena_.append(key);
                return slot.entry;
            }
            if (slot.tag == tag && slot.len == key.size() &&
                std::memcmp(arena_.data() + slot.offset, key.data(), key.size()) == 0) {
                slot.id = id;
                return slot.entry;
            }
        }
    }
    std::optional<int32_t> find(std::string_view key) const {
        if (slots_.empty()) return std::nullopt;
        size_t mask = slots_.size() - 1;
        uint64_t h = hash_bytes(key);
        auto tag = static_cast<uint32_t>(h >> 32);
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            const Slot& slot = slots_[i];
            if (slot.entry == kEmpty) return std::nullopt;
            if (slot.tag == tag && slot.len == key.size() &&
                std::memcmp(arena_.data() + slot.offset, key.data(), key.size()) == 0) {
                return slot.id;
            }
        }
    }
    std::string_view key(uint32_t index) const {
        const Slot& slot = slots_[entries_[index]];
        return {arena_.data() + slot.offset, slot.len};
    }
    int32_t id(uint32_t index) const { return slots_[entries_[index]].id; }
    size_t size() const { return entries_.size(); }

private:
    static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
    void grow() {
        size_t cap = slots_.empty() ? 16 : slots_.size() * 2;
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(cap, Slot{0, kEmpty, 0, 0, 0});
        size_t mask = cap - 1;
        for (uint32_t e = 0; e < entries_.size(); ++e) {
            Slot s = old[entries_[e]];
            uint64_t h = hash_bytes({arena_.data() + s.offset, s.len});
            size_t i = h & mask;
            while (slots_[i].entry != kEmpty) i = (i + 1) & mask;
            slots_[i] = s;
            entries_[e] = static_cast<uint32_t>(i);
        }
    }
    // Everything a probe needs in one 20-byte slot: the key bytes are the only other memory touched.
    struct Slot {
        uint32_t tag;    // high hash bits
        uint32_t entry;  // insertion index, kEmpty if free
        uint32_t offset, len;
        int32_t id;
    };
    std::vector<Slot> slots_;
    std::vector<uint32_t> entries_;  // insertion index -> slot
    std::string arena_;
};

// (left id, right id) -> (rank, merged id).
class MergeMap {
public:
    struct Value {
        uint32_t rank;
        int32_t new_id;
    };
    void reserve(size_t n) {
        size_t cap = 16;
        while (cap < n * 2) cap <<= 1;
        slots_.assign(cap, Slot{kEmptyKey, {}});
    }
    void insert(uint64_t key, Value v) {  // a repeated pair keeps the last value, as the tokenizers library does
        if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 16 : slots_.size() * 2);
        size_t mask = slots_.size() - 1;
        for (size_t i = hash_u64(key) & mask;; i = (i + 1) & mask) {
            if (slots_[i].key == kEmptyKey) {
                slots_[i] = {key, v};
                ++size_;
                return;
            }
            if (slots_[i].key == key) {
                slots_[i].value = v;
                return;
            }
        }
    }
    const Value* find(uint64_t key) const {
        if (slots_.empty()) return nullptr;
        size_t mask = slots_.size() - 1;
        for (size_t i = hash_u64(key) & mask;; i = (i + 1) & mask) {
            if (slots_[i].key == key) return &slots_[i].value;
            if (slots_[i].key == kEmptyKey) return nullptr;
        }
    }

private:
    static constexpr uint64_t kEmptyKey = ~0ull;  // ids are non-negative int32, so no real key has all bits set
    struct Slot {
        uint64_t key;
        Value value;
    };
    void rehash(size_t cap) {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(cap, Slot{kEmptyKey, {}});
        size_ = 0;
        for (const auto& s : old) {
            if (s.key != kEmptyKey) insert(s.key, s.value);
        }
    }
    std::vector<Slot> slots_;
    size_t size_ = 0;
};

}  // namespace taco
