#include "tokenizer/incremental_detokenizer.h"

namespace taco {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

bool ends_with_replacement(const std::string& s) {
    return s.size() >= kReplacement.size() &&
           s.compare(s.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0;
}

// "<0xXX>": ByteFallback turns a whole run of these into U+FFFDs when any byte of the run is invalid, so text ending
// in such a run is not final until a token of another kind follows.
bool is_byte_token(const std::optional<std::string>& token) {
    return token && token->size() == 6 && token->compare(0, 3, "<0x") == 0 && (*token)[5] == '>';
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<int32_t> prompt_ids,
                                               bool skip_special_tokens)
    : tokenizer_(tokenizer), prompt_ids_(std::move(prompt_ids)), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDetokenizer::decode_range(size_t begin, size_t end) const {
    return tokenizer_.decode(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                                  ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                             skip_special_tokens_);
}

bool IncrementalDetokenizer::visible(int32_t id) const {
    if (!tokenizer_.id_to_token(id)) return false;
    return !(skip_special_tokens_ && tokenizer_.is_special(id));
}

std::string IncrementalDetokenizer::push(int32_t id) {
    ids_.push_back(id);
    if (is_byte_token(tokenizer_.id_to_token(id))) return "";
    std::string prefix_text = decode_range(prefix_offset_, read_offset_);
    std::string new_text = decode_range(prefix_offset_, ids_.size());
    // Decoders treat the first token of what they are given specially (Metaspace drops its '▁', Strip its first
    // space). Diffing two decodes that share the same first visible token cancels that out.
    if (new_text.size() <= prefix_text.size() || new_text.compare(0, prefix_text.size(), prefix_text) != 0 ||
        ends_with_replacement(new_text)) {
        return "";
    }
    std::string piece = new_text.substr(prefix_text.size());
    size_t window_start = read_offset_;
    read_offset_ = ids_.size();
    // The next window starts at the ids just emitted, reaching back until it holds a visible id.
    while (window_start > 0 && ![&] {
        for (size_t i = window_start; i < read_offset_; ++i) {
            if (visible(ids_[i])) return true;
        }
        return false;
    }()) {
        --window_start;
    }
    prefix_offset_ = window_start;
    emitted_bytes_ += piece.size();
    return piece;
}

std::string IncrementalDetokenizer::flush() {
    std::string all = decode_range(0, ids_.size());
    std::string rest = emitted_bytes_ <= all.size() ? all.substr(emitted_bytes_) : std::string();
    emitted_bytes_ = all.size();
    prefix_offset_ = read_offset_ = ids_.size();
    return rest;
}

}  // namespace taco
