#include "tokenizer/added_vocabulary.h"

#include <array>

#include "tokenizer/unicode_utils.h"

namespace taco {

// Byte trie over token contents for leftmost-longest search.
struct AddedVocabulary::Trie {
    struct Node {
        std::unordered_map<uint8_t, int32_t> children;
        int32_t token_id = -1;
    };
    std::vector<Node> nodes{1};
    std::array<bool, 256> first_byte{};

    void insert(std::string_view s, int32_t id) {
        int32_t node = 0;
        for (char c : s) {
            auto b = static_cast<uint8_t>(c);
            auto it = nodes[node].children.find(b);
            if (it == nodes[node].children.end()) {
                nodes.emplace_back();
                int32_t child = static_cast<int32_t>(nodes.size() - 1);
                nodes[node].children.emplace(b, child);
                node = child;
            } else {
                node = it->second;
            }
        }
        nodes[node].token_id = id;
        if (!s.empty()) first_byte[static_cast<uint8_t>(s[0])] = true;
    }

    // Longest token starting at `pos`: its end and id, or id -1.
    std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const {
        std::pair<size_t, int32_t> best{pos, -1};
        int32_t node = 0;
        for (size_t i = pos; i < text.size(); ++i) {
            auto it = nodes[node].children.find(static_cast<uint8_t>(text[i]));
            if (it == nodes[node].children.end()) break;
            node = it->second;
            if (nodes[node].token_id >= 0) best = {i + 1, nodes[node].token_id};
        }
        return best;
    }
};

namespace {

int32_t last_char(std::string_view s) {
    if (s.empty()) return -1;
    size_t start = s.size() - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t len;
    return unicode::decode_utf8(s, start, len);
}

int32_t first_char(std::string_view s) {
    if (s.empty()) return -1;
    size_t len;
    return unicode::decode_utf8(s, 0, len);
}

// Start of the run of whitespace ending `s`.
size_t trailing_space_start(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
        size_t len;
        if (!unicode::is_whitespace(unicode::decode_utf8(s, start, len))) break;
        end = start;
    }
    return end;
}

size_t leading_space_length(std::string_view s) {
    size_t pos = 0;
    while (pos < s.size()) {
        size_t len;
        if (!unicode::is_whitespace(unicode::decode_utf8(s, pos, len))) break;
        pos += len;
    }
    return pos;
}

}  // namespace

void AddedVocabulary::add(const std::vector<AddedToken>& tokens, const Normalizer* normalizer) {
    for (const auto& t : tokens) {
        if (t.content.empty()) continue;
        by_content_[t.content] = t.id;
        by_id_[t.id] = t;
        normalized_form_.erase(t.id);
        if (t.normalized && normalizer) {
            std::string n = normalizer->normalize(t.content);
            if (n != t.content) normalized_form_[t.id] = std::move(n);
        }
        if (t.special) special_contents_.insert(t.content);
    }
    rebuild_tries();
}

void AddedVocabulary::rebuild_tries() {
    auto raw = std::make_shared<Trie>();
    auto normalized = std::make_shared<Trie>();
    bool any_raw = false, any_normalized = false;
    for (const auto& [id, t] : by_id_) {
        if (t.normalized) {
            auto it = normalized_form_.find(id);
            normalized->insert(it == normalized_form_.end() ? t.content : it->second, id);
            any_normalized = true;
        } else {
            raw->insert(t.content, id);
            any_raw = true;
        }
    }
    raw_trie_ = any_raw ? raw : nullptr;
    normalized_trie_ = any_normalized ? normalized : nullptr;
}

void AddedVocabulary::split_with(const TextPiece& piece, const Trie* trie, std::vector<TextPiece>& out) const {
    const std::string& s = piece.text;
    if (s.empty()) return;
    if (!trie) {
        out.push_back(piece);
        return;
    }
    auto emit = [&](size_t begin, size_t end, int32_t id) {
        if (end <= begin) return;
        TextPiece p;
        p.text = s.substr(begin, end - begin);
        p.original_start = piece.original_start + begin;
        p.added_id = id;
        out.push_back(std::move(p));
    };
    size_t start_offset = 0;
    size_t pos = 0;
    while (pos < s.size()) {
        if (!trie->first_byte[static_cast<uint8_t>(s[pos])]) {
            ++pos;
            continue;
        }
        auto [stop, id] = trie->longest_at(s, pos);
        if (id < 0) {
            ++pos;
            continue;
        }
        size_t start = pos;
        pos = stop;  // matches never overlap, kept or not
        const AddedToken& token = by_id_.at(id);
        if (token.single_word) {
            bool start_ok = start == 0 || !unicode::is_word_char(last_char(std::string_view(s).substr(0, start)));
            bool stop_ok = stop == s.size() || !unicode::is_word_char(first_char(std::string_view(s).substr(stop)));
            if (!start_ok || !stop_ok) continue;
        }
        if (token.lstrip) start = std::max(trailing_space_start(std::string_view(s).substr(0, start)), start_offset);
        if (token.rstrip) stop += leading_space_length(std::string_view(s).substr(stop));
        if (start_offset < start) emit(start_offset, start, -1);
        emit(start, stop, id);
        start_offset = stop;
    }
    if (start_offset < s.size()) emit(start_offset, s.size(), -1);
}

std::vector<TextPiece> AddedVocabulary::extract_and_normalize(std::string_view text,
                                                              const Normalizer* normalizer) const {
    std::vector<TextPiece> raw_pieces;
    TextPiece whole;
    whole.text = std::string(text);
    split_with(whole, raw_trie_.get(), raw_pieces);
    std::vector<TextPiece> out;
    out.reserve(raw_pieces.size());
    for (auto& piece : raw_pieces) {
        if (piece.added_id >= 0) {
            out.push_back(std::move(piece));
            continue;
        }
        if (normalizer) piece.text = normalizer->normalize(piece.text);
        split_with(piece, normalized_trie_.get(), out);
    }
    return out;
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
    auto it = by_content_.find(std::string(content));
    if (it == by_content_.end()) return std::nullopt;
    return it->second;
}

const std::string* AddedVocabulary::id_to_token(int32_t id) const {
    auto n = normalized_form_.find(id);
    if (n != normalized_form_.end()) return &n->second;
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second.content;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second;
}

bool AddedVocabulary::is_special_content(std::string_view content) const {
    return special_contents_.count(std::string(content)) > 0;
}

}  // namespace taco
