#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

// Python "\s" over a string: every code point is whitespace (and there is at least one).
bool all_whitespace(std::string_view s) {
    if (s.empty()) return false;
    for (size_t pos = 0; pos < s.size();) {
        size_t len = 1;
        if (!is_python_space(decode_utf8(s, pos, &len))) return false;
        pos += len;
    }
    return true;
}

// Length of the run of Python whitespace starting at pos.
size_t whitespace_run(const std::string& s, size_t pos) {
    size_t start = pos;
    while (pos < s.size()) {
        size_t len = 1;
        if (!is_python_space(decode_utf8(s, pos, &len))) break;
        pos += len;
    }
    return pos - start;
}

std::string rstrip_whitespace(const std::string& s) { return str_strip(s, nullptr, false, true); }

int count_newlines(std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// Python's "unicode-escape" decoding of a string literal body (jinja2 decodes literals this way).
Result<std::string> unescape(const std::string& body, int line) {
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
        char c = body[i];
        if (c != '\\' || i + 1 >= body.size()) {
            out += c;
            continue;
        }
        char e = body[++i];
        auto hex = [&](int digits) -> Result<char32_t> {
            if (i + digits >= body.size()) return error("line {}: truncated \\x/\\u escape in string literal", line);
            char32_t cp = 0;
            for (int k = 1; k <= digits; ++k) {
                char h = body[i + k];
                if (!std::isxdigit(static_cast<unsigned char>(h)))
                    return error("line {}: truncated \\x/\\u escape in string literal", line);
                cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                         ? h - '0'
                                                         : (std::tolower(h) - 'a' + 10));
            }
            i += digits;
            return cp;
        };
        switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x':
            case 'u':
            case 'U': {
                TACO_ASSIGN_OR_RETURN(char32_t cp, hex(e == 'x' ? 2 : e == 'u' ? 4 : 8));
                if (cp > 0x10FFFF) return error("line {}: illegal Unicode character in string literal", line);
                append_utf8(cp, out);
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    char32_t cp = static_cast<char32_t>(e - '0');
                    for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
                        cp = cp * 8 + static_cast<char32_t>(body[++i] - '0');
                    append_utf8(cp, out);
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string source) : src_(std::move(source)) {}

    Result<std::vector<Token>> run() {
        while (pos_ < src_.size()) {
            TACO_RETURN_IF_ERROR(lex_root());
        }
        tokens_.push_back({TokenType::kEof, "", line_});
        return std::move(tokens_);
    }

private:
    void emit(TokenType type, std::string value, int line) { tokens_.push_back({type, std::move(value), line}); }

    // Data up to the next tag, then the tag.
    Status lex_root() {
        size_t tag = std::string::npos;
        for (size_t p = src_.find('{', pos_); p != std::string::npos; p = src_.find('{', p + 1)) {
            if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
                tag = p;
                break;
            }
        }
        if (tag == std::string::npos) {
            std::string rest = src_.substr(pos_);
            if (!rest.empty()) emit(TokenType::kData, rest, line_);
            line_ += count_newlines(rest);
            pos_ = src_.size();
            return Status::ok();
        }
        char kind = src_[tag + 1];
        size_t after = tag + 2;
        char sign = (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) ? src_[after] : '\0';
        std::string text = src_.substr(pos_, tag - pos_);
        int text_newlines = count_newlines(text);
        size_t raw_end = 0;
        bool raw = kind == '%' && match_raw_begin(tag, &raw_end);
        text = apply_left_control(std::move(text), sign, kind != '{');
        if (!text.empty()) emit(TokenType::kData, text, line_);
        line_ += text_newlines;
        pos_ = after + (sign ? 1 : 0);
        line_starting_ = false;
        if (raw) {
            line_ += count_newlines(std::string_view(src_).substr(pos_, raw_end - pos_));
            line_starting_ = raw_end > 0 && src_[raw_end - 1] == '\n';
            pos_ = raw_end;
            return lex_raw_body();
        }
        if (kind == '#') return lex_comment();
        return lex_tag(kind == '%');
    }

    // The text before a tag after "-" (strip all trailing whitespace) or lstrip_blocks (strip spaces before a
    // block or comment tag that starts its line).
    std::string apply_left_control(std::string text, char sign, bool lstrip_applies) {
        if (sign == '-') return rstrip_whitespace(text);
        if (sign == '+' || !lstrip_applies) return text;
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting_) && all_whitespace(std::string_view(text).substr(l_pos))) text.resize(l_pos);
        return text;
    }

    // {%(-|+|)\s*raw\s*(-%}\s*|%})
    bool match_raw_begin(size_t tag, size_t* end) {
        size_t p = tag + 2;
        if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
        p += whitespace_run(src_, p);
        if (src_.compare(p, 3, "raw") != 0) return false;
        p += 3;
        p += whitespace_run(src_, p);
        if (src_.compare(p, 3, "-%}") == 0) {
            p += 3;
            p += whitespace_run(src_, p);
        } else if (src_.compare(p, 2, "%}") == 0) {
            p += 2;
        } else {
            return false;
        }
        *end = p;
        return true;
    }

    Status lex_raw_body() {
        for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
            size_t q = p + 2;
            char sign = (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ? src_[q] : '\0';
            if (sign) ++q;
            q += whitespace_run(src_, q);
            if (src_.compare(q, 6, "endraw") != 0) continue;
            q += 6;
            q += whitespace_run(src_, q);
            size_t end = 0;
            if (!match_block_end(q, &end)) continue;
            std::string text = src_.substr(pos_, p - pos_);
            int newlines = count_newlines(std::string_view(src_).substr(pos_, end - pos_));
            text = apply_left_control(std::move(text), sign, true);
            if (!text.empty()) emit(TokenType::kData, text, line_);
            line_ += newlines;
            line_starting_ = src_[end - 1] == '\n';
            pos_ = end;
            return Status::ok();
        }
        return error("line {}: missing end of raw directive", line_);
    }

    // "+%}" | "-%}" \s* | "%}" "\n"?  at p.
    bool match_block_end(size_t p, size_t* end) {
        if (src_.compare(p, 3, "+%}") == 0) {
            *end = p + 3;
        } else if (src_.compare(p, 3, "-%}") == 0) {
            *end = p + 3 + whitespace_run(src_, p + 3);
        } else if (src_.compare(p, 2, "%}") == 0) {
            *end = p + 2 + ((p + 2 < src_.size() && src_[p + 2] == '\n') ? 1 : 0);
        } else {
            return false;
        }
        return true;
    }

    Status lex_comment() {
        size_t close = src_.find("#}", pos_);
        if (close == std::string::npos) return error("line {}: missing end of comment tag", line_);
        size_t end = close + 2;
        if (close > pos_ && src_[close - 1] == '-') {
            end += whitespace_run(src_, end);
        } else if (close > pos_ && src_[close - 1] == '+') {
        } else if (end < src_.size() && src_[end] == '\n') {
            ++end;
        }
        line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
        line_starting_ = src_[end - 1] == '\n';
        pos_ = end;
        return Status::ok();
    }

    Status lex_tag(bool block) {
        emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "", line_);
        std::vector<char> balance;
        while (true) {
            if (pos_ >= src_.size()) return error("line {}: unexpected end of template inside a tag", line_);
            size_t end = 0;
            if (balance.empty()) {
                bool closed = false;
                if (block) {
                    closed = match_block_end(pos_, &end);
                } else if (src_.compare(pos_, 3, "-}}") == 0) {
                    end = pos_ + 3 + whitespace_run(src_, pos_ + 3);
                    closed = true;
                } else if (src_.compare(pos_, 2, "}}") == 0) {
                    end = pos_ + 2;
                    closed = true;
                }
                if (closed) {
                    emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "", line_);
                    line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
                    line_starting_ = src_[end - 1] == '\n';
                    pos_ = end;
                    return Status::ok();
                }
            }
            TACO_RETURN_IF_ERROR(lex_tag_token(balance));
        }
    }

    Status lex_tag_token(std::vector<char>& balance) {
        size_t ws = whitespace_run(src_, pos_);
        if (ws > 0) {
            line_ += count_newlines(std::string_view(src_).substr(pos_, ws));
            line_starting_ = src_[pos_ + ws - 1] == '\n';
            pos_ += ws;
            return Status::ok();
        }
        line_starting_ = false;
        char c = src_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c))) return lex_number();
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t p = pos_;
            while (p < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) ++p;
            emit(TokenType::kName, src_.substr(pos_, p - pos_), line_);
            pos_ = p;
            return Status::ok();
        }
        if (c == '\'' || c == '"') {
            size_t p = pos_ + 1;
            while (p < src_.size() && src_[p] != c) p += (src_[p] == '\\') ? 2 : 1;
            if (p >= src_.size()) return error("line {}: unterminated string literal", line_);
            TACO_ASSIGN_OR_RETURN(std::string value, unescape(src_.substr(pos_ + 1, p - pos_ - 1), line_));
            emit(TokenType::kString, std::move(value), line_);
            line_ += count_newlines(std::string_view(src_).substr(pos_, p + 1 - pos_));
            pos_ = p + 1;
            return Status::ok();
        }
        static const char* const kTwoCharOps[] = {"**", "//", "==", "!=", "<=", ">="};
        for (const char* op : kTwoCharOps) {
            if (src_.compare(pos_, 2, op) == 0) {
                emit(TokenType::kOperator, op, line_);
                pos_ += 2;
                return Status::ok();
            }
        }
        static const std::string kOneCharOps = "+-/*%~[](){}<>=.:|,;";
        if (kOneCharOps.find(c) == std::string::npos)
            return error("line {}: unexpected char '{}' in tag", line_, std::string(1, c));
        if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        if (c == ')' || c == ']' || c == '}') {
            if (balance.empty()) return error("line {}: unexpected '{}'", line_, std::string(1, c));
            if (balance.back() != c)
                return error("line {}: unexpected '{}', expected '{}'", line_, std::string(1, c),
                             std::string(1, balance.back()));
            balance.pop_back();
        }
        emit(TokenType::kOperator, std::string(1, c), line_);
        ++pos_;
        return Status::ok();
    }

    Status lex_number() {
        auto digits = [&](size_t p) {  // (\d+_)*\d+
            size_t start = p;
            while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                       (src_[p] == '_' && p > start && p + 1 < src_.size() &&
                                        std::isdigit(static_cast<unsigned char>(src_[p + 1])))))
                ++p;
            return p;
        };
        size_t p = digits(pos_);
        bool is_float = false;
        bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
        if (!after_dot) {
            size_t q = p;
            if (q + 1 < src_.size() && src_[q] == '.' && std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
                q = digits(q + 1);
                is_float = true;
            }
            if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
                size_t r = q + 1;
                if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
                if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r]))) {
                    q = digits(r);
                    is_float = true;
                }
            }
            if (is_float) p = q;
        }
        std::string text;
        for (size_t i = pos_; i < p; ++i)
            if (src_[i] != '_') text += src_[i];
        if (!is_float && text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos)
            return error("line {}: invalid integer literal '{}'", line_, text);
        emit(is_float ? TokenType::kFloat : TokenType::kInteger, text, line_);
        pos_ = p;
        return Status::ok();
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

std::string normalize_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
    return out;
}

}  // namespace

Result<std::vector<Token>> tokenize(const std::string& source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace taco::jinja
