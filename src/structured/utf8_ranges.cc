#include "structured/utf8_ranges.h"

#include <algorithm>

namespace taco::structured {

CodepointRanges normalize_ranges(CodepointRanges ranges) {
    CodepointRanges split;
    for (auto [lo, hi] : ranges) {
        hi = std::min(hi, kMaxCodepoint);
        if (lo > hi) continue;
        // Cut the surrogates out.
        if (lo < 0xD800 && hi >= 0xD800) split.push_back({lo, 0xD7FF});
        if (hi > 0xDFFF && lo <= 0xDFFF) split.push_back({0xE000, hi});
        if (hi < 0xD800 || lo > 0xDFFF) split.push_back({lo, hi});
    }
    std::sort(split.begin(), split.end());
    CodepointRanges out;
    for (const auto& r : split) {
        if (!out.empty() && r.first <= out.back().second + 1)
            out.back().second = std::max(out.back().second, r.second);
        else
            out.push_back(r);
    }
    return out;
}

CodepointRanges complement_ranges(const CodepointRanges& ranges) {
    const CodepointRanges sorted = normalize_ranges(ranges);
    CodepointRanges out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : sorted) {
        if (lo > next) out.push_back({next, lo - 1});
        next = hi + 1;
    }
    if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
    return normalize_ranges(out);
}

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

bool next_codepoint(std::string_view text, size_t& pos, uint32_t& cp) {
    const auto byte = [&](size_t i) { return uint8_t(text[i]); };
    const uint8_t b0 = byte(pos);
    int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos + size_t(len) > text.size()) return false;
    cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int i = 1; i < len; ++i) {
        if ((byte(pos + size_t(i)) & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (byte(pos + size_t(i)) & 0x3F);
    }
    static constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOfLength[len] || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    pos += size_t(len);
    return true;
}

namespace {

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] of one encoded length, split until every byte position covers a contiguous range independently
// (the method of the Rust regex-syntax crate's Utf8Sequences).
void split_same_length(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>& out) {
    const int n = encoded_length(lo);
    for (int i = 1; i < n; ++i) {
        const uint32_t m = (uint32_t(1) << (6 * i)) - 1;  // the low i continuation bytes
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                split_same_length(lo, lo | m, out);
                split_same_length((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                split_same_length(lo, (hi & ~m) - 1, out);
                split_same_length(hi & ~m, hi, out);
                return;
            }
        }
    }
    std::string a, b;
    append_utf8(lo, a);
    append_utf8(hi, b);
    ByteRangeSeq seq;
    for (size_t i = 0; i < a.size(); ++i) seq.bytes.push_back({uint8_t(a[i]), uint8_t(b[i])});
    out.push_back(std::move(seq));
}

}  // namespace

std::vector<ByteRangeSeq> utf8_sequences(const CodepointRanges& normalized) {
    std::vector<ByteRangeSeq> out;
    static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
    for (auto [lo, hi] : normalized) {
        for (uint32_t end : kLengthEnds) {
            if (lo > hi) break;
            if (lo > end) continue;
            const uint32_t part_hi = std::min(hi, end);
            split_same_length(lo, part_hi, out);
            lo = part_hi + 1;
        }
    }
    return out;
}

}  // namespace taco::structured
