// Unigram (SentencePiece's other model) as the tokenizers library runs it: Viterbi best path over the vocabulary's
// log-probability scores; a character no piece covers costs min_score - 10 as unk, consecutive unks fuse;
// byte_fallback spells an unk piece as <0xXX> tokens when they all exist.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/flat_maps.h"
#include "tokenizer/model.h"

namespace taco {

class UnigramModel final : public Model {
public:
    // From a tokenizer.json "model" object of type Unigram ("vocab": [[piece, score], ...], "unk_id", "byte_fallback").
    static Result<std::unique_ptr<UnigramModel>> from_json(const nlohmann::json& j);

    Status tokenize(std::string_view word, std::vector<int32_t>& out) const override;
    std::optional<int32_t> token_to_id(std::string_view token) const override { return ids_.find(token); }
    const std::string* id_to_token(int32_t id) const override;
    int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

private:
    UnigramModel() = default;
    std::vector<std::string> pieces_;
    std::vector<double> scores_;
    StringIdMap ids_;
    std::optional<int32_t> unk_id_;
    bool byte_fallback_ = false;
    double min_score_ = 0;
    size_t max_piece_bytes_ = 0;
};

}  // namespace taco
