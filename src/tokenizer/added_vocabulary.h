// Tokens added on top of the model's vocabulary (tokenizer.json "added_tokens"): found in the raw input before
// normalization (normalized=false) or in each normalized piece (normalized=true), leftmost-longest, with the
// single_word / lstrip / rstrip rules of the tokenizers library.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/split_pattern.h"

namespace taco {

struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
};

class AddedVocabulary {
public:
    // `normalizer` (may be null) gives the form normalized=true tokens are matched in.
    void add(const std::vector<AddedToken>& tokens, const Normalizer* normalizer);

    // Splits `text` into added tokens and normalized pieces (tokenizers' extract_and_normalize).
    std::vector<TextPiece> extract_and_normalize(std::string_view text, const Normalizer* normalizer) const;

    std::optional<int32_t> token_to_id(std::string_view content) const;
    // The string the decoder sees for an added token (its normalized form when it has one).
    const std::string* id_to_token(int32_t id) const;
    const AddedToken* find(int32_t id) const;
    bool is_special_content(std::string_view content) const;
    size_t size() const { return by_id_.size(); }
    const std::unordered_map<int32_t, AddedToken>& tokens() const { return by_id_; }

private:
    struct Trie;
    void split_with(const TextPiece& piece, const Trie* trie, std::vector<TextPiece>& out) const;
    void rebuild_tries();

    std::unordered_map<int32_t, AddedToken> by_id_;
    std::unordered_map<std::string, int32_t> by_content_;
    std::unordered_map<int32_t, std::string> normalized_form_;
    std::unordered_set<std::string> special_contents_;
    std::shared_ptr<Trie> raw_trie_, normalized_trie_;
};

}  // namespace taco
