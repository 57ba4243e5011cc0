// ByteSet: a set of byte values (256 bits), the label of a grammar edge.
#pragma once

#include <array>
#include <cstdint>

namespace taco::structured {

struct ByteSet {
    std::array<uint64_t, 4> words{};  // bit b of words[b / 64] <-> byte b

    static ByteSet of(uint8_t b) {
        ByteSet s;
        s.add(b);
        return s;
    }
    static ByteSet range(uint8_t lo, uint8_t hi) {
        ByteSet s;
        s.add_range(lo, hi);
        return s;
    }
    void add(uint8_t b) { words[b >> 6] |= uint64_t(1) << (b & 63); }
    void add_range(uint8_t lo, uint8_t hi) {
        for (int b = lo; b <= hi; ++b) add(uint8_t(b));
    }
    bool contains(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
    bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
    ByteSet& operator|=(const ByteSet& o) {
        for (int i = 0; i < 4; ++i) words[i] |= o.words[i];
        return *this;
    }
    bool operator==(const ByteSet& o) const = default;
};

}  // namespace taco::structured
