#include "tokenizer/decoders.h"

#include "core/json_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/split_pattern.h"
#include "tokenizer/unicode_utils.h"

namespace taco {

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
    decode_chain(tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
}

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    size_t pos = 0;
    for (size_t hit = s.find(from); hit != std::string::npos; hit = s.find(from, pos)) {
        out.append(s, pos, hit - pos);
        out.append(to);
        pos = hit + from.size();
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

class ByteLevelDecoder final : public TokenDecoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string bytes;
        for (const auto& t : tokens) {
            if (!byte_level::decode_token(t, bytes)) bytes.append(t);
        }
        tokens.assign(1, unicode::lossy_utf8(bytes));
    }
};

class MetaspaceDecoder final : public TokenDecoder {
public:
    MetaspaceDecoder(std::string replacement, bool strip_first)
        : replacement_(std::move(replacement)), strip_first_(strip_first) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i)
            replace_all(tokens[i], replacement_, i == 0 && strip_first_ ? "" : " ");
    }

private:
    std::string replacement_;
    bool strip_first_;  // prepend_scheme != never: every replacement char of the first token is dropped
};

class ByteFallbackDecoder final : public TokenDecoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        std::string pending;
        auto flush = [&] {
            if (pending.empty()) return;
            if (unicode::is_valid_utf8(pending)) {
                out.push_back(pending);
            } else {
                for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
            }
            pending.clear();
        };
        for (auto& t : tokens) {
            int byte = parse_byte_token(t);
            if (byte >= 0) {
                pending.push_back(static_cast<char>(byte));
            } else {
                flush();
                out.push_back(std::move(t));
            }
        }
        flush();
        tokens = std::move(out);
    }

private:
    static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
    static int parse_byte_token(const std::string& t) {
        if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
        int hi = hex(t[3]), lo = hex(t[4]);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }
};

class FuseDecoder final : public TokenDecoder {
public:
    void decode_chain(std::vector<std::string>& tokens) const override {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.assign(1, std::move(all));
    }
};

class StripDecoder final : public TokenDecoder {
public:
    StripDecoder(int32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (auto& t : tokens) {
            std::vector<std::pair<size_t, int32_t>> chars;  // (byte offset, code point)
            for (size_t pos = 0; pos < t.size();) {
                size_t len;
                chars.emplace_back(pos, unicode::decode_utf8(t, pos, len));
                pos += len;
            }
            size_t start_cut = 0;
            for (size_t i = 0; i < start_ && i < chars.size() && chars[i].second == content_; ++i) start_cut = i + 1;
            size_t stop_cut = chars.size();
            for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
                size_t index = chars.size() - i - 1;
                if (chars[index].second != content_) break;
                stop_cut = index;
            }
            if (stop_cut <= start_cut) {
                t.clear();
                continue;
            }
            size_t b = chars[start_cut].first;
            size_t e = stop_cut < chars.size() ? chars[stop_cut].first : t.size();
            t = t.substr(b, e - b);
        }
    }

private:
    int32_t content_;
    size_t start_, stop_;
};

class ReplaceDecoder final : public TokenDecoder {
public:
    ReplaceDecoder(SplitPattern pattern, std::string content)
        : pattern_(std::move(pattern)), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (auto& t : tokens) t = pattern_.replace_all(t, content_);
    }

private:
    SplitPattern pattern_;
    std::string content_;
};

std::string wordpiece_cleanup(std::string s) {
    s = clean_up_tokenization(std::move(s));
    replace_all(s, " do not", " don't");
    return s;
}

class WordPieceDecoder final : public TokenDecoder {
public:
    WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            auto& t = tokens[i];
            if (i != 0) {
                if (t.compare(0, prefix_.size(), prefix_) == 0) {
                    t.erase(0, prefix_.size());
                } else {
                    t = " " + t;
                }
            }
            if (cleanup_) t = wordpiece_cleanup(std::move(t));
        }
    }

private:
    std::string prefix_;
    bool cleanup_;
};

class BpeSuffixDecoder final : public TokenDecoder {
public:
    explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }

private:
    std::string suffix_;
};

class SequenceDecoder final : public TokenDecoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<TokenDecoder>> parts) : parts_(std::move(parts)) {}
    void decode_chain(std::vector<std::string>& tokens) const override {
        for (const auto& p : parts_) p->decode_chain(tokens);
    }

private:
    std::vector<std::unique_ptr<TokenDecoder>> parts_;
};

}  // namespace

std::string clean_up_tokenization(std::string text) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) replace_all(text, from, to);
    return text;
}

Result<std::unique_ptr<TokenDecoder>> make_decoder(const nlohmann::json& j) {
    if (j.is_null()) return std::unique_ptr<TokenDecoder>();
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        return error("decoder: expected an object with a \"type\", got {}", json_excerpt(j));
    }
    std::string type = j["type"];
    if (type == "ByteLevel") return std::unique_ptr<TokenDecoder>(new ByteLevelDecoder());
    if (type == "Metaspace") {
        std::string replacement = j.value("replacement", std::string("\xE2\x96\x81"));
        bool strip_first = true;
        if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
            strip_first = j["prepend_scheme"].get<std::string>() != "never";
        } else if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean()) {
            strip_first = j["add_prefix_space"].get<bool>();
        }
        return std::unique_ptr<TokenDecoder>(new MetaspaceDecoder(replacement, strip_first));
    }
    if (type == "ByteFallback") return std::unique_ptr<TokenDecoder>(new ByteFallbackDecoder());
    if (type == "Fuse") return std::unique_ptr<TokenDecoder>(new FuseDecoder());
    if (type == "Strip") {
        std::string content = j.value("content", std::string(" "));
        size_t len;
        int32_t cp = content.empty() ? ' ' : unicode::decode_utf8(content, 0, len);
        return std::unique_ptr<TokenDecoder>(new StripDecoder(cp, j.value("start", 0u), j.value("stop", 0u)));
    }
    if (type == "Replace") {
        if (!j.contains("pattern") || !j.contains("content") || !j["content"].is_string()) {
            return error("decoder Replace: needs \"pattern\" and \"content\"");
        }
        auto pattern = SplitPattern::from_json(j["pattern"]);
        if (!pattern) return pattern.status().with_context("decoder Replace");
        return std::unique_ptr<TokenDecoder>(
            new ReplaceDecoder(std::move(pattern).value(), j["content"].get<std::string>()));
    }
    if (type == "WordPiece") {
        return std::unique_ptr<TokenDecoder>(
            new WordPieceDecoder(j.value("prefix", std::string("##")), j.value("cleanup", true)));
    }
    if (type == "BPEDecoder")
        return std::unique_ptr<TokenDecoder>(new BpeSuffixDecoder(j.value("suffix", std::string("</w>"))));
    if (type == "Sequence") {
        if (!j.contains("decoders") || !j["decoders"].is_array())
            return error("decoder Sequence: missing \"decoders\" array");
        std::vector<std::unique_ptr<TokenDecoder>> parts;
        for (const auto& sub : j["decoders"]) {
            TACO_ASSIGN_OR_RETURN(auto part, make_decoder(sub));
            if (part) parts.push_back(std::move(part));
        }
        return std::unique_ptr<TokenDecoder>(new SequenceDecoder(std::move(parts)));
    }
    return error("unknown decoder type '{}'", type);
}

}  // namespace taco
