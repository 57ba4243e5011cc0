#include "tokenizer/normalizers.h"

#include <vector>

#include "core/json_util.h"
#include "tokenizer/split_pattern.h"
#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {

class UnicodeNormalizer final : public Normalizer {
public:
    explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
    std::string normalize(std::string_view text) const override { return unicode::normalize(text, form_); }

private:
    unicode::NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {
public:
    std::string normalize(std::string_view text) const override { return unicode::to_lower(text); }
};

class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
    std::string normalize(std::string_view text) const override {
        if (text.empty()) return std::string();
        return prefix_ + std::string(text);
    }

private:
    std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(SplitPattern pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    std::string normalize(std::string_view text) const override { return pattern_.replace_all(text, content_); }

private:
    SplitPattern pattern_;
    std::string content_;
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
    std::string normalize(std::string_view text) const override {
        size_t begin = 0, end = text.size();
        if (left_) {
            while (begin < end) {
                size_t len;
                int32_t cp = unicode::decode_utf8(text, begin, len);
                if (!unicode::is_whitespace(cp)) break;
                begin += len;
            }
        }
        if (right_) {
            while (end > begin) {
                size_t start = end - 1;
                while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
                size_t len;
                int32_t cp = unicode::decode_utf8(text, start, len);
                if (!unicode::is_whitespace(cp)) break;
                end = start;
            }
        }
        return std::string(text.substr(begin, end - begin));
    }

private:
    bool left_, right_;
};

class StripAccentsNormalizer final : public Normalizer {
public:
    std::string normalize(std::string_view text) const override {
        std::string out;
        for (size_t pos = 0; pos < text.size();) {
            size_t len;
            int32_t cp = unicode::decode_utf8(text, pos, len);
            if (!unicode::is_mark_nonspacing(cp)) out.append(text.substr(pos, len));
            pos += len;
        }
        return out;
    }
};

// BERT's: control characters removed, whitespace -> ' ', spaces around CJK ideographs, accents stripped after
// NFD when lowercasing (unless strip_accents says otherwise), lowercase.
class BertNormalizer final : public Normalizer {
public:
    BertNormalizer(bool clean_text, bool handle_chinese, std::optional<bool> strip_accents, bool lowercase)
        : clean_text_(clean_text),
          handle_chinese_(handle_chinese),
          lowercase_(lowercase),
          strip_accents_(strip_accents.value_or(lowercase)) {}
    std::string normalize(std::string_view text) const override {
        std::string out;
        for (size_t pos = 0; pos < text.size();) {
            size_t len;
            int32_t cp = unicode::decode_utf8(text, pos, len);
            pos += len;
            if (clean_text_) {
                bool is_ws_control = cp == '\t' || cp == '\n' || cp == '\r';
                if (cp == 0 || cp == 0xFFFD || (!is_ws_control && unicode::is_control(cp))) continue;
                if (unicode::is_whitespace(cp)) cp = ' ';
            }
            if (handle_chinese_ && unicode::is_cjk(cp)) {
                out.push_back(' ');
                unicode::append_utf8(out, cp);
                out.push_back(' ');
            } else {
                unicode::append_utf8(out, cp);
            }
        }
        if (strip_accents_) {
            out = StripAccentsNormalizer().normalize(unicode::normalize(out, unicode::NormalForm::kNfd));
        }
        if (lowercase_) out = unicode::to_lower(out);
        return out;
    }

private:
    bool clean_text_, handle_chinese_, lowercase_, strip_accents_;
};

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
    std::string normalize(std::string_view text) const override {
        std::string s(text);
        for (const auto& p : parts_) s = p->normalize(s);
        return s;
    }

private:
    std::vector<std::unique_ptr<Normalizer>> parts_;
};

bool get_bool(const nlohmann::json& j, const char* key, bool fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j) {
    if (j.is_null()) return std::unique_ptr<Normalizer>();
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        return error("normalizer: expected an object with a \"type\", got {}", json_excerpt(j));
    }
    std::string type = j["type"];
    if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfc));
    if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfd));
    if (type == "NFKC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfkc));
    if (type == "NFKD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(unicode::NormalForm::kNfkd));
    if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
    if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNormalizer());
    if (type == "Prepend") {
        if (!j.contains("prepend") || !j["prepend"].is_string())
            return error("normalizer Prepend: missing \"prepend\"");
        return std::unique_ptr<Normalizer>(new PrependNormalizer(j["prepend"].get<std::string>()));
    }
    if (type == "Replace") {
        if (!j.contains("pattern") || !j.contains("content") || !j["content"].is_string()) {
            return error("normalizer Replace: needs \"pattern\" and \"content\"");
        }
        auto pattern = SplitPattern::from_json(j["pattern"]);
        if (!pattern) return pattern.status().with_context("normalizer Replace");
        return std::unique_ptr<Normalizer>(
            new ReplaceNormalizer(std::move(pattern).value(), j["content"].get<std::string>()));
    }
    if (type == "Strip") {
        return std::unique_ptr<Normalizer>(
            new StripNormalizer(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true)));
    }
    if (type == "BertNormalizer") {
        std::optional<bool> strip_accents;
        if (j.contains("strip_accents") && j["strip_accents"].is_boolean())
            strip_accents = j["strip_accents"].get<bool>();
        return std::unique_ptr<Normalizer>(new BertNormalizer(get_bool(j, "clean_text", true),
                                                              get_bool(j, "handle_chinese_chars", true), strip_accents,
                                                              get_bool(j, "lowercase", true)));
    }
    if (type == "Sequence") {
        if (!j.contains("normalizers") || !j["normalizers"].is_array()) {
            return error("normalizer Sequence: missing \"normalizers\" array");
        }
        std::vector<std::unique_ptr<Normalizer>> parts;
        for (const auto& sub : j["normalizers"]) {
            TACO_ASSIGN_OR_RETURN(auto part, make_normalizer(sub));
            if (part) parts.push_back(std::move(part));
        }
        return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(parts)));
    }
    return error("unknown normalizer type '{}'", type);
}

}  // namespace taco
