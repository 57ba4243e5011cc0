// WordPiece as the tokenizers library runs it (BERT): greedy longest match from the start of the word, continuation
// pieces carry continuing_subword_prefix ("##"); a word with an unmatchable part, or longer than
// max_input_chars_per_word characters, becomes the unk token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/flat_maps.h"
#include "tokenizer/model.h"

namespace taco {

class WordPieceModel final : public Model {
public:
    // From a tokenizer.json "model" object of type WordPiece; vocab from `j` unless given (json_scan.h).
    static Result<std::unique_ptr<WordPieceModel>> from_json(const nlohmann::json& j,
                                                             std::vector<std::pair<std::string, int32_t>>* vocab);

    Status tokenize(std::string_view word, std::vector<int32_t>& out) const override;
    std::optional<int32_t> token_to_id(std::string_view token) const override { return vocab_.find(token); }
    const std::string* id_to_token(int32_t id) const override;
    int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.size()); }

private:
    WordPieceModel() = default;
    StringIdMap vocab_;
    std::vector<std::string> id_to_token_;
    std::vector<bool> has_id_;
    std::string unk_token_ = "[UNK]";
    std::string prefix_ = "##";
    size_t max_input_chars_per_word_ = 100;
};

}  // namespace taco
