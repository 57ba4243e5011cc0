#include "structured/ebnf_parser.h"

#include <cctype>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "structured/regex_compiler.h"
#include "structured/utf8_ranges.h"

namespace taco::structured {
namespace {

constexpr int kMaxNesting = 256;

// Lark's common.lark terminals, as regexes.
const std::map<std::string, std::string>& lark_common() {
    static const std::map<std::string, std::string> kCommon = {
        {"DIGIT", "[0-9]"},
        {"HEXDIGIT", "[a-fA-F0-9]"},
        {"INT", "[0-9]+"},
        {"SIGNED_INT", "[+-]?[0-9]+"},
        {"DECIMAL", "[0-9]+\\.[0-9]*|\\.[0-9]+"},
        {"FLOAT", "([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"},
        {"SIGNED_FLOAT", "[+-]?(([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"},
        {"NUMBER", "([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+"},
        {"SIGNED_NUMBER", "[+-]?(([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+)"},
        {"LCASE_LETTER", "[a-z]"},
        {"UCASE_LETTER", "[A-Z]"},
        {"LETTER", "[a-zA-Z]"},
        {"WORD", "[a-zA-Z]+"},
        {"CNAME", "[a-zA-Z_][a-zA-Z0-9_]*"},
        {"ESCAPED_STRING", "\"([^\"\\\\]|\\\\.)*\""},
        {"WS_INLINE", "[ \\t]+"},
        {"WS", "[ \\t\\f\\r\\n]+"},
        {"CR", "\\r"},
        {"LF", "\\n"},
        {"NEWLINE", "(\\r?\\n)+"},
    };
    return kCommon;
}

class EbnfParser {
public:
    explicit EbnfParser(std::string_view text) : t_(text) { lark_ = text.find("::=") == std::string_view::npos; }

    Result<Grammar> parse() {
        skip_space();
        while (pos_ < t_.size()) {
            if (t_[pos_] == '%') {
                TACO_RETURN_IF_ERROR(directive());
            } else {
                TACO_RETURN_IF_ERROR(rule());
            }
            skip_space();
        }
        const char* root_name = lark_ ? "start" : "root";
        auto root = b_.find_rule(root_name);
        if (!root || !defined_.count(root_name))
            return error("grammar: no '{}' rule (the {} grammar starts there)", root_name, lark_ ? "Lark" : "GBNF");
        for (const auto& [name, line] : used_)
            if (!defined_.count(name)) return error("grammar line {}: rule '{}' is used but not defined", line, name);
        auto g = b_.finish(*root);
        if (!g) return error("grammar: {}", g.status().message());
        return g;
    }

private:
    Status fail(std::string_view what) const {
        int line = 1;
        for (size_t i = 0; i < pos_ && i < t_.size(); ++i) line += t_[i] == '\n';
        return error("grammar line {}: {}", line, what);
    }
    int line() const {
        int n = 1;
        for (size_t i = 0; i < pos_ && i < t_.size(); ++i) n += t_[i] == '\n';
        return n;
    }

    // Spaces, newlines and comments (# ... and // ... to the end of the line).
    void skip_space() {
        while (pos_ < t_.size()) {
            const char c = t_[pos_];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                ++pos_;
            } else if (c == '#' || (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '/')) {
                while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

    std::string read_name() {
        const size_t start = pos_;
        while (pos_ < t_.size() && name_char(t_[pos_])) ++pos_;
        return std::string(t_.substr(start, pos_ - start));
    }

    // At a name: is it followed by a definition operator (a new rule starts)?
    bool at_definition() {
        const size_t save = pos_;
        if (pos_ < t_.size() && (t_[pos_] == '?' || t_[pos_] == '!')) ++pos_;
        const std::string name = read_name();
        skip_space();
        bool def = !name.empty() && pos_ < t_.size() &&
                   (t_.substr(pos_, 3) == "::=" || (lark_ && t_[pos_] == ':') || (lark_ && t_[pos_] == '.'));
        pos_ = save;
        return def;
    }

    int32_t rule_id(const std::string& name) {
        if (auto found = b_.find_rule(name)) return *found;
        return b_.add_rule(name);
    }

    Status directive() {
        const size_t start = pos_;
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
        std::string line(t_.substr(start, pos_ - start));
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        if (line.rfind("%import", 0) != 0)
            return fail(fmt::format("'{}' is not supported", line.substr(0, line.find(' '))));
        std::string what = line.substr(7);
        while (!what.empty() && what.front() == ' ') what.erase(0, 1);
        if (what.rfind("common.", 0) != 0)
            return fail(fmt::format("'%import {}' is not supported (only common.NAME)", what));
        const std::string name = what.substr(7);
        auto found = lark_common().find(name);
        if (found == lark_common().end()) return fail(fmt::format("'%import common.{}' is not supported", name));
        if (defined_.count(name)) return Status::ok();
        auto f = compile_regex(found->second, b_);
        if (!f) return fail(f.status().message());
        b_.set_body(rule_id(name), *f);
        defined_.insert(name);
        return Status::ok();
    }

    Status rule() {
        if (t_[pos_] == '?' || t_[pos_] == '!') ++pos_;  // Lark's inline / keep-tokens markers change no language
        const std::string name = read_name();
        if (name.empty()) return fail(fmt::format("expected a rule name, found '{}'", t_.substr(pos_, 10)));
        skip_space();
        if (lark_ && pos_ < t_.size() && t_[pos_] == '.')
            return fail(fmt::format("terminal priorities ('{}.N') are not supported", name));
        if (t_.substr(pos_, 3) == "::=")
            pos_ += 3;
        else if (lark_ && pos_ < t_.size() && t_[pos_] == ':')
            ++pos_;
        else
            return fail(fmt::format("expected '{}' after rule name '{}'", lark_ ? ":" : "::=", name));
        if (defined_.count(name)) return fail(fmt::format("rule '{}' is defined twice", name));
        defined_.insert(name);
        const int32_t id = rule_id(name);
        auto body = alternatives(0);
        if (!body) return body.status();
        b_.set_body(id, *body);
        return Status::ok();
    }

    Result<Fragment> alternatives(int depth) {
        if (depth > kMaxNesting) return fail("groups nest too deeply");
        std::vector<Fragment> choices;
        while (true) {
            auto seq = sequence(depth);
            if (!seq) return seq.status();
            choices.push_back(*seq);
            skip_space();
            if (pos_ < t_.size() && t_[pos_] == '|') {
                ++pos_;
                continue;
            }
            break;
        }
        return choices.size() == 1 ? choices[0] : b_.alt(choices);
    }

    Result<Fragment> sequence(int depth) {
        Fragment f = b_.empty();
        while (true) {
            skip_space();
            if (pos_ >= t_.size()) break;
            const char c = t_[pos_];
            if (c == '|' || c == ')' || c == '%' || (lark_ && c == ']') || c == ';') {
                if (c == ';') ++pos_;  // an optional rule terminator
                break;
            }
            if (t_.substr(pos_, 2) == "->") return fail("aliases ('-> name') are not supported");
            if ((std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '?' || c == '!') && at_definition())
                break;
            auto item = primary(depth);
            if (!item) return item.status();
            auto quantified = quantifiers(*item);
            if (!quantified) return quantified.status();
            f = b_.seq(f, *quantified);
        }
        return f;
    }

    Result<Fragment> quantifiers(Fragment f) {
        while (pos_ < t_.size()) {
            const char c = t_[pos_];
            if (c == '*') {
                f = b_.star(f);
            } else if (c == '+') {
                f = b_.plus(f);
            } else if (c == '?') {
                f = b_.optional(f);
            } else if (c == '{') {
                const size_t close = t_.find('}', pos_);
                if (close == std::string_view::npos) return fail("missing '}'");
                const std::string inner(t_.substr(pos_ + 1, close - pos_ - 1));
                int64_t min = 0;
                std::optional<int64_t> max;
                const size_t comma = inner.find(',');
                try {
                    size_t used = 0;
                    const std::string lo = inner.substr(0, comma);
                    min = std::stoll(lo, &used);
                    if (used != lo.size()) throw std::invalid_argument(lo);
                    if (comma == std::string::npos) {
                        max = min;
                    } else if (comma + 1 < inner.size()) {
                        const std::string hi = inner.substr(comma + 1);
                        max = std::stoll(hi, &used);
                        if (used != hi.size()) throw std::invalid_argument(hi);
                    }
                } catch (const std::exception&) {
                    return fail(fmt::format("bad repetition '{{{}}}'", inner));
                }
                auto r = b_.repeat(f, min, max);
                if (!r) return fail(r.status().message());
                f = *r;
                pos_ = close;
            } else {
                break;
            }
            ++pos_;
        }
        return f;
    }

    Result<std::string> string_literal() {
        const char quote = t_[pos_++];
        std::string out;
        while (true) {
            if (pos_ >= t_.size() || t_[pos_] == '\n') return fail("unterminated string literal");
            const char c = t_[pos_++];
            if (c == quote) break;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= t_.size()) return fail("unterminated string literal");
            const char e = t_[pos_++];
            auto hex = [&](int digits) -> Result<uint32_t> {
                uint32_t v = 0;
                for (int i = 0; i < digits; ++i) {
                    if (pos_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[pos_])))
                        return fail("bad hex escape");
                    v = v * 16 + uint32_t(std::stoi(std::string(1, t_[pos_++]), nullptr, 16));
                }
                return v;
            };
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'f': out += '\f'; break;
                case 'b': out += '\b'; break;
                case '0': out += '\0'; break;
                case 'x': {
                    auto v = hex(2);
                    if (!v) return v.status();
                    out += char(*v);
                    break;
                }
                case 'u': {
                    auto v = hex(4);
                    if (!v) return v.status();
                    if (*v >= 0xD800 && *v <= 0xDFFF) return fail("surrogate escapes are not supported");
                    append_utf8(*v, out);
                    break;
                }
                default: out += e;
            }
        }
        if (lark_ && pos_ < t_.size() && t_[pos_] == 'i') return fail("string flags (\"...\"i) are not supported");
        return out;
    }

    Result<Fragment> primary(int depth) {
        const char c = t_[pos_];
        if (c == '"' || c == '\'') {
            auto s = string_literal();
            if (!s) return s.status();
            return b_.literal(*s);
        }
        if (c == '(' || (lark_ && c == '[')) {
            const char close = c == '(' ? ')' : ']';
            ++pos_;
            auto inner = alternatives(depth + 1);
            if (!inner) return inner.status();
            skip_space();
            if (pos_ >= t_.size() || t_[pos_] != close) return fail(fmt::format("missing '{}'", close));
            ++pos_;
            return close == ']' ? b_.optional(*inner) : *inner;
        }
        if (c == '[' || c == '/') {
            // A GBNF class is a regex as it stands; a /regex/ ends at the next unescaped '/'.
            const size_t start = pos_;
            size_t i = pos_ + 1;
            const char close = c == '[' ? ']' : '/';
            if (c == '[' && i < t_.size() && t_[i] == '^') ++i;
            if (c == '[' && i < t_.size() && t_[i] == ']') ++i;
            while (i < t_.size() && t_[i] != close && t_[i] != '\n') i += t_[i] == '\\' ? 2 : 1;
            if (i >= t_.size() || t_[i] != close) return fail(fmt::format("missing '{}'", close));
            pos_ = i + 1;
            const std::string_view regex =
                c == '[' ? t_.substr(start, pos_ - start) : t_.substr(start + 1, i - start - 1);
            if (c == '/' && pos_ < t_.size() && std::isalpha(static_cast<unsigned char>(t_[pos_])))
                return fail("regex flags (/.../i) are not supported");
            auto f = compile_regex(regex, b_);
            if (!f) return fail(f.status().message());
            return *f;
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            const int at_line = line();
            const std::string name = read_name();
            used_.emplace(name, at_line);
            return b_.call(rule_id(name));
        }
        return fail(fmt::format("unexpected '{}'", c));
    }

    std::string_view t_;
    size_t pos_ = 0;
    bool lark_ = false;
    GrammarBuilder b_;
    std::set<std::string> defined_;
    std::map<std::string, int> used_;  // rule -> first line that uses it
};

}  // namespace

Result<Grammar> parse_ebnf(std::string_view text) { return EbnfParser(text).parse(); }

}  // namespace taco::structured
