// TokenVocab: the bytes each token id stands for, sorted so that a depth-first walk over a byte trie of the
// vocabulary is a walk over consecutive entries (shared prefixes are advanced once). Token ids at or past the
// tokenizer's size (padding rows of the logits) and tokens with no bytes are never matchable; special tokens only where
// a grammar names them (kSpecialTokenMark).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace taco::structured {

// A special token's bytes in a TokenVocab: its text between two of these. 0xFF never occurs in UTF-8, which is all a
// grammar accepts, so a special token is matchable only where a grammar asks for it by GrammarBuilder::tag_literal
// (XGrammar and llguidance likewise keep special tokens out of masks unless the grammar names them).
inline constexpr char kSpecialTokenMark = '\xFF';

class TokenVocab {
public:
    // token_bytes[id]: the bytes of token id, or nullopt when it can never be produced by a grammar. vocab_size:
    // the width of the logits (>= token_bytes.size()).
    TokenVocab(std::vector<std::optional<std::string>> token_bytes, int64_t vocab_size);

    // The bytes of every token of `tokenizer` (byte-level BPE, SentencePiece with byte fallback or Metaspace
    // vocabularies); a special token's bytes are its text between two kSpecialTokenMark.
    static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tokenizer, int64_t vocab_size);

    int64_t vocab_size() const { return vocab_size_; }
    int64_t num_mask_words() const { return (vocab_size_ + 31) / 32; }  // [vocab/32] uint32 bitmask width
    const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }
    bool matchable(int32_t id) const { return id >= 0 && size_t(id) < bytes_.size() && !bytes_[size_t(id)].empty(); }

    // Matchable ids in byte order; lcp(i): the common prefix length of sorted()[i - 1] and sorted()[i] (0 at i = 0).
    const std::vector<int32_t>& sorted() const { return sorted_; }
    int32_t lcp(size_t i) const { return lcp_[i]; }
    // The bytes of sorted()[i], from one buffer in sorted order (a walk over the vocabulary reads it in sequence).
    std::string_view sorted_bytes(size_t i) const {
        return std::string_view(sorted_text_).substr(sorted_offsets_[i], sorted_offsets_[i + 1] - sorted_offsets_[i]);
    }
    // sorted() indices [first_byte_begin(b), first_byte_begin(b + 1)) are the tokens starting with byte b.
    size_t first_byte_begin(int b) const { return first_byte_begin_[size_t(b)]; }

    // A key naming this vocabulary in grammar caches (its contents' hash).
    uint64_t fingerprint() const { return fingerprint_; }

private:
    std::vector<std::string> bytes_;  // [tokenizer size] empty: not matchable
    int64_t vocab_size_ = 0;
    std::vector<int32_t> sorted_;
    std::vector<int32_t> lcp_;
    std::string sorted_text_;             // the sorted tokens' bytes, concatenated
    std::vector<size_t> sorted_offsets_;  // [sorted + 1] where each starts in sorted_text_
    std::array<size_t, 257> first_byte_begin_{};
    uint64_t fingerprint_ = 0;
};

}  // namespace taco::structured
