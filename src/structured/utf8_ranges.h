// Code point ranges -> the UTF-8 byte sequences that encode them, as alternatives of byte-range sequences
// (for example U+0080..U+07FF -> [C2-DF][80-BF]). Surrogates (U+D800..U+DFFF) are never produced.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taco::structured {

using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive [lo, hi], any order

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Sorted, merged, surrogates removed.
CodepointRanges normalize_ranges(CodepointRanges ranges);
// Everything in [0, kMaxCodepoint] (less the surrogates) that is not in `ranges`.
CodepointRanges complement_ranges(const CodepointRanges& ranges);

// One alternative: byte i of the encoding lies in [lo[i], hi[i]].
struct ByteRangeSeq {
    std::vector<std::pair<uint8_t, uint8_t>> bytes;
};
std::vector<ByteRangeSeq> utf8_sequences(const CodepointRanges& normalized);

void append_utf8(uint32_t cp, std::string& out);
// Decodes one code point at text[pos], advancing pos; false on invalid UTF-8.
bool next_codepoint(std::string_view text, size_t& pos, uint32_t& cp);

}  // namespace taco::structured
