#include "tokenizer/pre_tokenizers.h"

#include <array>
#include <functional>

#include "core/json_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_utils.h"

namespace taco {

void PreTokenizer::pre_tokenize(std::vector<TextPiece>& pieces) const {
    std::vector<TextPiece> out;
    out.reserve(pieces.size() * 2);
    for (auto& piece : pieces) {
        if (piece.added_id >= 0) {
            out.push_back(std::move(piece));
            continue;
        }
        if (piece.text.empty()) continue;  // an empty string has no splits to pre-tokenize
        std::vector<TextPiece> parts;
        split(std::move(piece), parts);
        for (auto& p : parts) {
            if (p.added_id >= 0 || !p.text.empty()) out.push_back(std::move(p));
        }
    }
    pieces = std::move(out);
}

namespace {

using Matches = std::vector<std::pair<std::pair<size_t, size_t>, bool>>;

// tokenizers' Pattern for a char predicate: every matching character is its own match.
Matches char_matches(std::string_view text, const std::function<bool(int32_t)>& pred) {
    Matches out;
    if (text.empty()) {
        out.push_back({{0, 0}, false});
        return out;
    }
    size_t last = 0;
    for (size_t pos = 0; pos < text.size();) {
        size_t len;
        int32_t cp = unicode::decode_utf8(text, pos, len);
        if (pred(cp)) {
            if (last < pos) out.push_back({{last, pos}, false});
            out.push_back({{pos, pos + len}, true});
            last = pos + len;
        }
        pos += len;
    }
    if (last < text.size()) out.push_back({{last, text.size()}, false});
    return out;
}

void split_by(TextPiece&& piece, const Matches& matches, SplitBehavior behavior, std::vector<TextPiece>& out) {
    append_sub_pieces(piece, apply_split_behavior(matches, behavior), out);
}

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(SplitPattern pattern, SplitBehavior behavior, bool invert)
        : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        auto matches = pattern_.find_matches(piece.text);
        if (invert_) {
            for (auto& m : matches) m.second = !m.second;
        }
        split_by(std::move(piece), matches, behavior_, out);
    }

public:
    bool can_stream() const override { return true; }
    void stream(std::string_view text, size_t original_start, const WordSink& emit) const override {
        auto matches = pattern_.find_matches(text);
        if (invert_) {
            for (auto& m : matches) m.second = !m.second;
        }
        for (auto [s, e] : apply_split_behavior(matches, behavior_)) {
            if (e > s) emit(text.substr(s, e - s));
        }
    }

private:
    SplitPattern pattern_;
    SplitBehavior behavior_;
    bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool add_prefix_space, std::shared_ptr<SplitPattern> gpt2_pattern)
        : add_prefix_space_(add_prefix_space), pattern_(std::move(gpt2_pattern)) {}

protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) piece.text = " " + piece.text;
        size_t first = out.size();
        if (pattern_) {
            split_by(std::move(piece), pattern_->find_matches(piece.text), SplitBehavior::kIsolated, out);
        } else {
            out.push_back(std::move(piece));
        }
        for (size_t i = first; i < out.size(); ++i) {
            std::string mapped;
            mapped.reserve(out[i].text.size() * 2);
            byte_level::encode_bytes(out[i].text, mapped);
            out[i].text = std::move(mapped);
        }
    }

public:
    bool can_stream() const override { return true; }
    void stream(std::string_view text, size_t original_start, const WordSink& emit) const override {
        if (text.empty()) return;
        std::string prefixed;
        if (add_prefix_space_ && (text.empty() || text[0] != ' ')) {
            prefixed.reserve(text.size() + 1);
            prefixed.push_back(' ');
            prefixed.append(text);
            text = prefixed;
        }
        // One buffer per nesting depth and thread: no allocation per word once warm.
        thread_local std::array<std::string, 4> buffers;
        thread_local size_t depth = 0;
        std::string local;
        std::string& mapped = depth < buffers.size() ? buffers[depth] : local;
        ++depth;
        struct DepthGuard {
            size_t& d;
            ~DepthGuard() { --d; }
        } guard{depth};
        auto map_and_emit = [&](std::string_view word) {
            mapped.clear();
            byte_level::encode_bytes(word, mapped);
            emit(mapped);
        };
        if (!pattern_) {
            if (!text.empty()) map_and_emit(text);
            return;
        }
        for (const auto& [range, is_match] : pattern_->find_matches(text)) {
            if (range.second > range.first) map_and_emit(text.substr(range.first, range.second - range.first));
        }
    }

private:
    bool add_prefix_space_;
    std::shared_ptr<SplitPattern> pattern_;  // null when use_regex is false
};

class MetaspacePreTokenizer final : public PreTokenizer {
public:
    MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
        : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        std::string text;
        text.reserve(piece.text.size() + replacement_.size());
        for (char c : piece.text) {
            if (c == ' ') {
                text.append(replacement_);
            } else {
                text.push_back(c);
            }
        }
        bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
        bool prepend = false;
        switch (scheme_) {
            case PrependScheme::kAlways: prepend = !starts; break;
            case PrependScheme::kFirst: prepend = !starts && piece.original_start == 0; break;
            case PrependScheme::kNever: break;
        }
        if (prepend) text = replacement_ + text;
        piece.text = std::move(text);
        if (!split_) {
            out.push_back(std::move(piece));
            return;
        }
        auto matches = SplitPattern::literal(replacement_).find_matches(piece.text);
        split_by(std::move(piece), matches, SplitBehavior::kMergedWithNext, out);
    }

private:
    std::string replacement_;
    PrependScheme scheme_;
    bool split_;
};

class CharSplitPreTokenizer final : public PreTokenizer {
public:
    CharSplitPreTokenizer(std::function<bool(int32_t)> pred, SplitBehavior behavior)
        : pred_(std::move(pred)), behavior_(behavior) {}

protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        auto matches = char_matches(piece.text, pred_);
        split_by(std::move(piece), matches, behavior_, out);
    }

private:
    std::function<bool(int32_t)> pred_;
    SplitBehavior behavior_;
};

// Whitespace: the words of `\w+|[^\w\s]+` (Rust regex classes); everything else is dropped.
class WhitespacePreTokenizer final : public PreTokenizer {
protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        const std::string& t = piece.text;
        std::vector<std::pair<size_t, size_t>> ranges;
        int kind = 0, run_start = 0;  // kind: 0 none, 1 word, 2 other non-space
        for (size_t pos = 0; pos <= t.size();) {
            int k = 0;
            size_t len = 1;
            if (pos < t.size()) {
                int32_t cp = unicode::decode_utf8(t, pos, len);
                k = unicode::is_word_char(cp) ? 1 : unicode::is_whitespace(cp) ? 0 : 2;
            }
            if (k != kind) {
                if (kind != 0) ranges.emplace_back(run_start, pos);
                kind = k;
                run_start = static_cast<int>(pos);
            }
            pos += len;
        }
        append_sub_pieces(piece, ranges, out);
    }
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}

protected:
    void split(TextPiece&& piece, std::vector<TextPiece>& out) const override {
        std::vector<TextPiece> current;
        current.push_back(std::move(piece));
        for (const auto& p : parts_) p->pre_tokenize(current);
        for (auto& c : current) out.push_back(std::move(c));
    }

public:
    bool can_stream() const override {
        for (const auto& p : parts_) {
            if (!p->can_stream()) return false;
        }
        return true;
    }
    void stream(std::string_view text, size_t original_start, const WordSink& emit) const override {
        if (!text.empty()) stream_from(0, text, original_start, emit);
    }

private:
    // Words of stage `i` feed stage i + 1; a sub-word's original offset is only exact at the piece start, which is
    // all Metaspace's "first" scheme asks (and Metaspace does not stream).
    void stream_from(size_t i, std::string_view text, size_t original_start, const WordSink& emit) const {
        if (i == parts_.size()) {
            emit(text);
            return;
        }
        parts_[i]->stream(text, original_start, [&](std::string_view word) {
            auto w = reinterpret_cast<uintptr_t>(word.data()), t = reinterpret_cast<uintptr_t>(text.data());
            size_t offset = w >= t && w <= t + text.size() ? w - t : 0;  // ByteLevel's words live in its own buffer
            stream_from(i + 1, word, original_start + offset, emit);
        });
    }
    std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

bool get_bool(const nlohmann::json& j, const char* key, bool fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::shared_ptr<SplitPattern> gpt2_pattern() {
    static std::shared_ptr<SplitPattern> pattern = [] {
        auto p = SplitPattern::regex(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
        return std::make_shared<SplitPattern>(std::move(p).value());
    }();
    return pattern;
}

bool is_bert_punctuation(int32_t cp) { return unicode::is_ascii_punctuation(cp) || unicode::is_punctuation(cp); }

}  // namespace

std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(const std::string& replacement, PrependScheme scheme,
                                                           bool split) {
    return std::make_unique<MetaspacePreTokenizer>(replacement, scheme, split);
}

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j) {
    if (j.is_null()) return std::unique_ptr<PreTokenizer>();
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        return error("pre_tokenizer: expected an object with a \"type\", got {}", json_excerpt(j));
    }
    std::string type = j["type"];
    if (type == "Split") {
        if (!j.contains("pattern")) return error("pre_tokenizer Split: missing \"pattern\"");
        auto pattern = SplitPattern::from_json(j["pattern"]);
        if (!pattern) return pattern.status().with_context("pre_tokenizer Split");
        auto behavior = parse_split_behavior(j.value("behavior", nlohmann::json()));
        if (!behavior) return behavior.status().with_context("pre_tokenizer Split");
        return std::unique_ptr<PreTokenizer>(
            new SplitPreTokenizer(std::move(pattern).value(), *behavior, get_bool(j, "invert", false)));
    }
    if (type == "ByteLevel") {
        bool use_regex = get_bool(j, "use_regex", true);
        return std::unique_ptr<PreTokenizer>(
            new ByteLevelPreTokenizer(get_bool(j, "add_prefix_space", true), use_regex ? gpt2_pattern() : nullptr));
    }
    if (type == "Metaspace") {
        std::string replacement = j.contains("replacement") && j["replacement"].is_string()
                                      ? j["replacement"].get<std::string>()
                                      : std::string("\xE2\x96\x81");
        PrependScheme scheme = PrependScheme::kAlways;
        if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
            std::string s = j["prepend_scheme"];
            if (s == "first") {
                scheme = PrependScheme::kFirst;
            } else if (s == "never") {
                scheme = PrependScheme::kNever;
            } else if (s != "always") {
                return error("pre_tokenizer Metaspace: unknown prepend_scheme '{}'", s);
            }
        } else if (!get_bool(j, "add_prefix_space", true)) {
            scheme = PrependScheme::kNever;
        }
        return make_metaspace_pre_tokenizer(replacement, scheme, get_bool(j, "split", true));
    }
    if (type == "Digits") {
        bool individual = get_bool(j, "individual_digits", false);
        return std::unique_ptr<PreTokenizer>(new CharSplitPreTokenizer(
            unicode::is_digit, individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous));
    }
    if (type == "Whitespace") return std::unique_ptr<PreTokenizer>(new WhitespacePreTokenizer());
    if (type == "WhitespaceSplit") {
        return std::unique_ptr<PreTokenizer>(
            new CharSplitPreTokenizer(unicode::is_whitespace, SplitBehavior::kRemoved));
    }
    if (type == "Punctuation") {
        SplitBehavior behavior = SplitBehavior::kIsolated;
        if (j.contains("behavior")) {
            auto b = parse_split_behavior(j["behavior"]);
            if (!b) return b.status().with_context("pre_tokenizer Punctuation");
            behavior = *b;
        }
        return std::unique_ptr<PreTokenizer>(new CharSplitPreTokenizer(is_bert_punctuation, behavior));
    }
    if (type == "BertPreTokenizer") {
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        parts.push_back(std::make_unique<CharSplitPreTokenizer>(unicode::is_whitespace, SplitBehavior::kRemoved));
        parts.push_back(std::make_unique<CharSplitPreTokenizer>(is_bert_punctuation, SplitBehavior::kIsolated));
        return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(parts)));
    }
    if (type == "Sequence") {
        if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
            return error("pre_tokenizer Sequence: missing \"pretokenizers\" array");
        }
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        for (const auto& sub : j["pretokenizers"]) {
            TACO_ASSIGN_OR_RETURN(auto part, make_pre_tokenizer(sub));
            if (part) parts.push_back(std::move(part));
        }
        return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(parts)));
    }
    return error("unknown pre_tokenizer type '{}'", type);
}

}  // namespace taco
