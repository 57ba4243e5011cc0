// How normalizers and pre-tokenizers find pieces of text: a literal string or an Oniguruma regex, and the
// Hugging Face SplitDelimiterBehavior that turns matches into pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/regex.h"

namespace taco {

struct TextPiece {
    std::string text;
    size_t original_start = 0;  // byte offset in the encoded input where the piece starts (Metaspace "first")
    int32_t added_id = -1;      // >= 0: an added token, finished; pre-tokenizers and the model leave it alone
};

// A literal string or a regex, as tokenizer.json writes it: {"String": "..."} or {"Regex": "..."}.
class SplitPattern {
public:
    static Result<SplitPattern> from_json(const nlohmann::json& j);
    static SplitPattern literal(std::string text);
    static Result<SplitPattern> regex(const std::string& pattern);

    // Covering, ordered ranges of `text`, each flagged as a match or not (tokenizers' Pattern::find_matches).
    std::vector<std::pair<std::pair<size_t, size_t>, bool>> find_matches(std::string_view text) const;
    // Every match replaced by `content`.
    std::string replace_all(std::string_view text, std::string_view content) const;

private:
    std::string literal_;
    std::shared_ptr<Regex> regex_;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
Result<SplitBehavior> parse_split_behavior(const nlohmann::json& j);

// The byte ranges a piece splits into (empty ranges dropped), from `matches` as find_matches returns them.
std::vector<std::pair<size_t, size_t>> apply_split_behavior(
    const std::vector<std::pair<std::pair<size_t, size_t>, bool>>& matches, SplitBehavior behavior);

// Appends the non-empty pieces of `piece` named by `ranges` to `out` (original offsets carried along).
void append_sub_pieces(const TextPiece& piece, const std::vector<std::pair<size_t, size_t>>& ranges,
                       std::vector<TextPiece>& out);

}  // namespace taco
