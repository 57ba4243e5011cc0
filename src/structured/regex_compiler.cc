#include "structured/regex_compiler.h"

#include <fmt/format.h>

#include "structured/utf8_ranges.h"

namespace taco::structured {
namespace {

constexpr int kMaxGroupDepth = 256;  // nesting deeper than this is refused (no input may exhaust the stack)

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

const CodepointRanges kDigit = {{'0', '9'}};
const CodepointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodepointRanges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                                {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

// The characters JSON must write escaped inside a string, and how.
bool json_special(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }
std::string json_escape(uint32_t cp) {
    switch (cp) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        case '\b': return "\\b";
        case '\f': return "\\f";
        default: return fmt::format("\\u{:04x}", cp);
    }
}

class RegexParser {
public:
    RegexParser(std::string_view pattern, GrammarBuilder& b, const RegexOptions& options)
        : p_(pattern), b_(b), options_(options) {}

    Result<Fragment> parse() {
        size_t begin = 0, end = p_.size();
        const bool anchored_start = !p_.empty() && p_[0] == '^';
        if (anchored_start) begin = 1;
        // A final '$' preceded by an even number of backslashes is an anchor.
        bool anchored_end = false;
        if (end > begin && p_[end - 1] == '$') {
            size_t slashes = 0;
            while (end - 1 - slashes > begin && p_[end - 2 - slashes] == '\\') ++slashes;
            anchored_end = slashes % 2 == 0;
        }
        if (anchored_end) --end;
        pos_ = begin;
        end_ = end;
        int branches = 0;
        auto body = parse_alternation(0, branches);
        if (!body) return body.status();
        if (pos_ != end_) return fail("unbalanced ')'");
        if (!options_.search) return *body;
        if ((anchored_start || anchored_end) && branches > 1)
            return fail("an anchor applies to one alternative only here; group the alternatives, e.g. ^(a|b)$");
        Fragment f = *body;
        if (!anchored_start) f = b_.seq(b_.star(emit({{0, kMaxCodepoint}})), f);
        if (!anchored_end) f = b_.seq(f, b_.star(emit({{0, kMaxCodepoint}})));
        return f;
    }

private:
    Status fail(std::string_view what) const { return error("regex '{}': {} (at offset {})", p_, what, pos_); }
    bool at_end() const { return pos_ >= end_; }
    char peek() const { return p_[pos_]; }

    Result<Fragment> parse_alternation(int depth, int& branches) {
        if (depth > kMaxGroupDepth) return fail("groups nest too deeply");
        std::vector<Fragment> choices;
        while (true) {
            auto seq = parse_sequence(depth);
            if (!seq) return seq.status();
            choices.push_back(*seq);
            if (at_end() || peek() != '|') break;
            ++pos_;
        }
        branches = int(choices.size());
        return choices.size() == 1 ? choices[0] : b_.alt(choices);
    }

    Result<Fragment> parse_sequence(int depth) {
        Fragment f = b_.empty();
        while (!at_end() && peek() != '|' && peek() != ')') {
            auto atom = parse_atom(depth);
            if (!atom) return atom.status();
            auto repeated = parse_quantifiers(*atom);
            if (!repeated) return repeated.status();
            f = b_.seq(f, *repeated);
        }
        return f;
    }

    // Reads "{m}", "{m,}" or "{m,n}" at pos_; false (pos_ unchanged) when the text there is not one, as ECMAScript
    // then reads '{' as a literal.
    bool read_braces(int64_t& min, std::optional<int64_t>& max) {
        size_t i = pos_ + 1;
        auto number = [&](int64_t& out) {
            const size_t start = i;
            out = 0;
            while (i < end_ && is_digit(p_[i]) && i - start < 9) out = out * 10 + (p_[i++] - '0');
            return i > start && !(i < end_ && is_digit(p_[i]));
        };
        if (!number(min)) return false;
        max = min;
        if (i < end_ && p_[i] == ',') {
            ++i;
            int64_t n = 0;
            if (i < end_ && p_[i] == '}')
                max.reset();
            else if (number(n))
                max = n;
            else
                return false;
        }
        if (i >= end_ || p_[i] != '}') return false;
        pos_ = i + 1;
        return true;
    }

    Result<Fragment> parse_quantifiers(Fragment f) {
        while (!at_end()) {
            const char c = peek();
            if (c == '*') {
                f = b_.star(f);
                ++pos_;
            } else if (c == '+') {
                f = b_.plus(f);
                ++pos_;
            } else if (c == '?') {
                f = b_.optional(f);
                ++pos_;
            } else if (c == '{') {
                int64_t min = 0;
                std::optional<int64_t> max;
                if (!read_braces(min, max)) return f;
                auto r = b_.repeat(f, min, max);
                if (!r) return fail(r.status().message());
                f = *r;
            } else {
                return f;
            }
            // A lazy quantifier matches the same strings; a second quantifier is an error as in ECMAScript.
            if (!at_end() && peek() == '?') ++pos_;
            if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?'))
                return fail("nothing to repeat (a quantifier follows a quantifier)");
        }
        return f;
    }

    Result<Fragment> parse_atom(int depth) {
        const char c = peek();
        if (c == '(') {
            ++pos_;
            if (!at_end() && peek() == '?') {
                ++pos_;
                if (!at_end() && peek() == ':') {
                    ++pos_;
                } else if (!at_end() && peek() == '<' && pos_ + 1 < end_ && p_[pos_ + 1] != '=' &&
                           p_[pos_ + 1] != '!') {
                    while (!at_end() && peek() != '>') ++pos_;
                    if (at_end()) return fail("unterminated group name");
                    ++pos_;
                } else {
                    return fail("lookaround and inline flags ('(?=', '(?!', '(?<=', '(?i)') are not supported");
                }
            }
            int branches = 0;
            auto inner = parse_alternation(depth + 1, branches);
            if (!inner) return inner.status();
            if (at_end() || peek() != ')') return fail("missing ')'");
            ++pos_;
            return *inner;
        }
        if (c == '[') {
            auto ranges = parse_class();
            if (!ranges) return ranges.status();
            return emit(*ranges);
        }
        if (c == '.') {
            ++pos_;
            return emit(complement_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
        }
        if (c == '^' || c == '$')
            return fail("anchors ('^', '$') are supported only at the start and end of the pattern");
        if (c == '*' || c == '+' || c == '?') return fail("nothing to repeat");
        if (c == '\\') {
            CodepointRanges ranges;
            TACO_RETURN_IF_ERROR(parse_escape(false, ranges));
            return emit(ranges);
        }
        uint32_t cp = 0;
        if (!next_codepoint(p_, pos_, cp)) return fail("invalid UTF-8");
        return emit({{cp, cp}});
    }

    // At a '\\': the code points it stands for.
    Status parse_escape(bool in_class, CodepointRanges& out) {
        ++pos_;
        if (at_end()) return fail("a trailing backslash");
        const char c = peek();
        ++pos_;
        auto single = [&](uint32_t cp) {
            out.push_back({cp, cp});
            return Status::ok();
        };
        auto add_all = [&](const CodepointRanges& set, bool negate) {
            const CodepointRanges r = negate ? complement_ranges(set) : set;
            out.insert(out.end(), r.begin(), r.end());
            return Status::ok();
        };
        switch (c) {
            case 'd': return add_all(kDigit, false);
            case 'D': return add_all(kDigit, true);
            case 'w': return add_all(kWord, false);
            case 'W': return add_all(kWord, true);
            case 's': return add_all(kSpace, false);
            case 'S': return add_all(kSpace, true);
            case 'n': return single('\n');
            case 'r': return single('\r');
            case 't': return single('\t');
            case 'f': return single('\f');
            case 'v': return single('\v');
            case '0':
                if (!at_end() && is_digit(peek())) return fail("octal escapes are not supported");
                return single(0);
            case 'b':
                if (in_class) return single('\b');
                return fail("word boundaries ('\\b') are not supported");
            case 'B': return fail("word boundaries ('\\B') are not supported");
            case 'x': {
                if (pos_ + 2 > end_ || hex_value(p_[pos_]) < 0 || hex_value(p_[pos_ + 1]) < 0)
                    return fail("'\\x' needs two hex digits");
                const uint32_t cp = uint32_t(hex_value(p_[pos_]) * 16 + hex_value(p_[pos_ + 1]));
                pos_ += 2;
                return single(cp);
            }
            case 'u': {
                uint32_t cp = 0;
                if (!at_end() && peek() == '{') {
                    ++pos_;
                    int digits = 0;
                    while (!at_end() && hex_value(peek()) >= 0 && digits < 6)
                        cp = cp * 16 + uint32_t(hex_value(p_[pos_++])), ++digits;
                    if (digits == 0 || at_end() || peek() != '}' || cp > kMaxCodepoint)
                        return fail("bad '\\u{...}' escape");
                    ++pos_;
                } else {
                    for (int i = 0; i < 4; ++i) {
                        if (at_end() || hex_value(peek()) < 0) return fail("'\\u' needs four hex digits");
                        cp = cp * 16 + uint32_t(hex_value(p_[pos_++]));
                    }
                }
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    return fail("surrogate code points ('\\uD800'..'\\uDFFF') are not supported");
                return single(cp);
            }
            case 'p':
            case 'P': return fail("Unicode property escapes ('\\p{...}') are not supported");
            case 'k': return fail("named backreferences ('\\k<...>') are not supported");
            case 'c': return fail("control escapes ('\\cX') are not supported");
            default: break;
        }
        if (is_digit(c)) return fail("backreferences ('\\1') are not supported");
        --pos_;
        uint32_t cp = 0;
        if (!next_codepoint(p_, pos_, cp)) return fail("invalid UTF-8");
        return single(cp);  // an escaped punctuation character stands for itself
    }

    Result<CodepointRanges> parse_class() {
        ++pos_;  // '['
        bool negate = false;
        if (!at_end() && peek() == '^') {
            negate = true;
            ++pos_;
        }
        CodepointRanges ranges;
        // One class member: a code point (single) or a class escape such as \d (set, not usable in a range).
        auto member = [&](CodepointRanges& got, bool& is_single) -> Status {
            got.clear();
            if (peek() == '\\') {
                TACO_RETURN_IF_ERROR(parse_escape(true, got));
            } else {
                uint32_t cp = 0;
                if (!next_codepoint(p_, pos_, cp)) return fail("invalid UTF-8");
                got.push_back({cp, cp});
            }
            is_single = got.size() == 1 && got[0].first == got[0].second;
            return Status::ok();
        };
        while (true) {
            if (at_end()) return fail("missing ']'");
            if (peek() == ']') break;
            CodepointRanges first;
            bool first_single = false;
            TACO_RETURN_IF_ERROR(member(first, first_single));
            if (pos_ + 1 < end_ && peek() == '-' && p_[pos_ + 1] != ']') {
                ++pos_;
                CodepointRanges last;
                bool last_single = false;
                TACO_RETURN_IF_ERROR(member(last, last_single));
                if (!first_single || !last_single) return fail("a class escape cannot bound a range");
                if (first[0].first > last[0].first) return fail("a class range out of order");
                ranges.push_back({first[0].first, last[0].first});
            } else {
                ranges.insert(ranges.end(), first.begin(), first.end());
            }
        }
        ++pos_;  // ']'
        return negate ? complement_ranges(ranges) : normalize_ranges(ranges);
    }

    // One code point of the set, as UTF-8 (escaped where JSON needs it).
    Fragment emit(const CodepointRanges& raw) {
        CodepointRanges ranges = normalize_ranges(raw);
        std::vector<Fragment> choices;
        if (options_.json_string) {
            CodepointRanges plain;
            for (auto [lo, hi] : ranges) {
                for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x5C); ++cp)
                    if (json_special(cp)) choices.push_back(b_.literal(json_escape(cp)));
                // The pieces of [lo, hi] between the specials.
                uint32_t from = lo;
                for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x5C); ++cp) {
                    if (json_special(cp)) {
                        if (cp > from) plain.push_back({from, cp - 1});
                        from = cp + 1;
                    }
                }
                if (from <= hi) plain.push_back({from, hi});
            }
            ranges = normalize_ranges(plain);
        }
        for (const ByteRangeSeq& seq : utf8_sequences(ranges)) {
            Fragment f = b_.empty();
            for (auto [lo, hi] : seq.bytes) f = b_.seq(f, b_.bytes(ByteSet::range(lo, hi)));
            choices.push_back(f);
        }
        return choices.size() == 1 ? choices[0] : b_.alt(choices);
    }

    std::string_view p_;
    GrammarBuilder& b_;
    RegexOptions options_;
    size_t pos_ = 0, end_ = 0;
};

}  // namespace

Result<Fragment> compile_regex(std::string_view pattern, GrammarBuilder& builder, const RegexOptions& options) {
    return RegexParser(pattern, builder, options).parse();
}

}  // namespace taco::structured
