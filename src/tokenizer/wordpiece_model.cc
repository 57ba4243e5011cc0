#include "tokenizer/wordpiece_model.h"

#include "core/limits.h"
#include "tokenizer/unicode_utils.h"

namespace taco {

Result<std::unique_ptr<WordPieceModel>> WordPieceModel::from_json(
    const nlohmann::json& j, std::vector<std::pair<std::string, int32_t>>* scanned) {
    std::vector<std::pair<std::string, int32_t>> vocab;
    if (scanned) {
        vocab = std::move(*scanned);
    } else {
        if (!j.contains("vocab") || !j["vocab"].is_object())
            return error("model WordPiece: \"vocab\" must be an object");
        for (const auto& [token, id] : j["vocab"].items()) {
            if (!id.is_number_integer()) return error("model WordPiece: vocab entry '{}' has a non-integer id", token);
            vocab.emplace_back(token, id.get<int32_t>());
        }
    }
    std::unique_ptr<WordPieceModel> m(new WordPieceModel());
    if (j.contains("unk_token") && j["unk_token"].is_string()) m->unk_token_ = j["unk_token"];
    if (j.contains("continuing_subword_prefix") && j["continuing_subword_prefix"].is_string()) {
        m->prefix_ = j["continuing_subword_prefix"];
    }
    if (j.contains("max_input_chars_per_word") && j["max_input_chars_per_word"].is_number_unsigned()) {
        m->max_input_chars_per_word_ = j["max_input_chars_per_word"];
    }
    int32_t max_id = -1;
    for (const auto& [token, id] : vocab) {
        if (id < 0) return error("model WordPiece: token '{}' has negative id {}", token, id);
        // The id table is dense (max id + 1 entries): an id past the limit would allocate gigabytes.
        if (id > limits::kMaxTokenId)
            return error("model WordPiece: token '{}' has id {}, past the limit of {} (limits::kMaxTokenId)", token, id,
                         limits::kMaxTokenId);
        max_id = std::max(max_id, id);
    }
    m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
    m->has_id_.assign(static_cast<size_t>(max_id + 1), false);
    m->vocab_.reserve(vocab.size());
    for (auto& [token, id] : vocab) {
        m->vocab_.insert(token, id);
        m->id_to_token_[id] = std::move(token);
        m->has_id_[id] = true;
    }
    return m;
}

const std::string* WordPieceModel::id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
    return &id_to_token_[id];
}

Status WordPieceModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
    auto unk = [&]() -> Status {
        auto id = vocab_.find(unk_token_);
        if (!id) return error("WordPiece: unk token '{}' is not in the vocab", unk_token_);
        out.push_back(*id);
        return Status::ok();
    };
    if (unicode::count_chars(word) > max_input_chars_per_word_) return unk();
    std::vector<int32_t> pieces;
    std::string candidate;
    size_t start = 0;
    while (start < word.size()) {
        size_t end = word.size();
        std::optional<int32_t> found;
        while (start < end) {
            candidate.clear();
            if (start > 0) candidate = prefix_;
            candidate.append(word.substr(start, end - start));
            if ((found = vocab_.find(candidate))) break;
            do {
                --end;  // drop the last character of the candidate
            } while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
        }
        if (!found) return unk();
        pieces.push_back(*found);
        start = end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
    return Status::ok();
}

}  // namespace taco
