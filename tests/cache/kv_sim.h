// KvSim: stands in for the KV tensors in cache tests. Each slot of each block holds a 64-bit "payload" that the
// simulated forward pass derives from the whole token prefix up to that position (as real KV depends on it), so
// a block table reading back the right payloads proves that the queued copies were made and ran in order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/block.h"

namespace taco::testing {

// Payload of position `pos`: a function of salt and tokens[0..pos]; never 0 (0 marks a slot never written).
inline uint64_t payload(std::span<const int32_t> tokens, int64_t pos, uint64_t salt) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (salt * 0xBF58476D1CE4E5B9ull);
    for (int64_t i = 0; i <= pos; ++i) {
        h ^= uint64_t(uint32_t(tokens[size_t(i)])) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
        h *= 0x94D049BB133111EBull;
    }
    return h | 1;
}

class KvSim {
public:
    KvSim(int64_t num_device_blocks, int64_t num_host_blocks, int64_t block_size)
        : block_size_(block_size),
          device_(size_t(num_device_blocks * block_size), 0),
          host_(size_t(num_host_blocks * block_size), 0) {}

    void apply(std::span<const BlockCopy> copies) {
        for (const BlockCopy& c : copies) {
            const std::vector<uint64_t>& src = c.src_tier == Tier::kDevice ? device_ : host_;
            std::vector<uint64_t>& dst = c.dst_tier == Tier::kDevice ? device_ : host_;
            for (int64_t i = 0; i < block_size_; ++i)
                dst[size_t(c.dst * block_size_ + i)] = src[size_t(c.src * block_size_ + i)];
        }
    }

    // The forward pass of positions [begin, end) of a request.
    void write(const std::vector<BlockId>& table, std::span<const int32_t> tokens, int64_t begin, int64_t end,
               uint64_t salt) {
        for (int64_t pos = begin; pos < end; ++pos) slot(table, pos) = payload(tokens, pos, salt);
    }

    // Number of leading positions of [0, end) whose payload is right (== end when all are).
    int64_t num_correct(const std::vector<BlockId>& table, std::span<const int32_t> tokens, int64_t end,
                        uint64_t salt) {
        for (int64_t pos = 0; pos < end; ++pos)
            if (slot(table, pos) != payload(tokens, pos, salt)) return pos;
        return end;
    }

private:
    uint64_t& slot(const std::vector<BlockId>& table, int64_t pos) {
        return device_[size_t(table.at(size_t(pos / block_size_)) * block_size_ + pos % block_size_)];
    }

    int64_t block_size_;
    std::vector<uint64_t> device_;  // [num_device_blocks, block_size]
    std::vector<uint64_t> host_;    // [num_host_blocks, block_size]
};

}  // namespace taco::testing
