#include "tokenizer/unicode_utils.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

namespace taco::unicode {
namespace {

// Number of bytes of a well-formed sequence's maximal valid prefix starting at s[pos] (Unicode table 3-7),
// and whether the sequence is complete.
size_t maximal_prefix(std::string_view s, size_t pos, bool& complete) {
    complete = false;
    auto b0 = static_cast<uint8_t>(s[pos]);
    if (b0 < 0x80) {
        complete = true;
        return 1;
    }
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
    } else if (b0 == 0xE0) {
        need = 2, lo = 0xA0;
    } else if (b0 == 0xED) {
        need = 2, hi = 0x9F;
    } else if (b0 >= 0xE1 && b0 <= 0xEF) {
        need = 2;
    } else if (b0 == 0xF0) {
        need = 3, lo = 0x90;
    } else if (b0 >= 0xF1 && b0 <= 0xF3) {
        need = 3;
    } else if (b0 == 0xF4) {
        need = 3, hi = 0x8F;
    } else {
        return 1;  // not a lead byte
    }
    size_t len = 1;
    for (size_t k = 0; k < need; ++k) {
        if (pos + len >= s.size()) return len;
        auto b = static_cast<uint8_t>(s[pos + len]);
        uint8_t l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
        if (b < l || b > h) return len;
        ++len;
    }
    complete = true;
    return len;
}

int32_t category(int32_t cp) { return utf8proc_category(cp); }

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t pos) {
    if (pos >= s.size()) return 0;
    bool complete;
    size_t len = maximal_prefix(s, pos, complete);
    return complete ? len : 0;
}

int32_t decode_utf8(std::string_view s, size_t pos, size_t& len) {
    len = valid_sequence_length(s, pos);
    if (len == 0) {
        len = 1;
        return -1;
    }
    auto b = reinterpret_cast<const uint8_t*>(s.data()) + pos;
    switch (len) {
        case 1: return b[0];
        case 2: return ((b[0] & 0x1F) << 6) | (b[1] & 0x3F);
        case 3: return ((b[0] & 0x0F) << 12) | ((b[1] & 0x3F) << 6) | (b[2] & 0x3F);
        default: return ((b[0] & 0x07) << 18) | ((b[1] & 0x3F) << 12) | ((b[2] & 0x3F) << 6) | (b[3] & 0x3F);
    }
}

size_t valid_prefix_length(std::string_view s) {
    size_t pos = 0;
    while (pos < s.size()) {
        if (static_cast<uint8_t>(s[pos]) < 0x80) {
            ++pos;
            continue;
        }
        size_t len = valid_sequence_length(s, pos);
        if (len == 0) break;
        pos += len;
    }
    return pos;
}

bool is_valid_utf8(std::string_view s) { return valid_prefix_length(s) == s.size(); }

void append_utf8(std::string& out, int32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string to_utf8(int32_t cp) {
    std::string out;
    append_utf8(out, cp);
    return out;
}

std::string lossy_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        bool complete;
        size_t len = maximal_prefix(bytes, pos, complete);
        if (complete) {
            out.append(bytes.substr(pos, len));
        } else {
            out.append("\xEF\xBF\xBD");
        }
        pos += len;
    }
    return out;
}

size_t count_chars(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    return n;
}

bool is_whitespace(int32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

bool is_word_char(int32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return true;
    switch (category(cp)) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO:
        case UTF8PROC_CATEGORY_MN:
        case UTF8PROC_CATEGORY_MC:
        case UTF8PROC_CATEGORY_ME:
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_PC: return true;
        default: return false;
    }
}

bool is_alphanumeric(int32_t cp) {
    switch (category(cp)) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO:
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_NO: return true;
        default: return false;
    }
}

bool is_punctuation(int32_t cp) {
    switch (category(cp)) {
        case UTF8PROC_CATEGORY_PC:
        case UTF8PROC_CATEGORY_PD:
        case UTF8PROC_CATEGORY_PS:
        case UTF8PROC_CATEGORY_PE:
        case UTF8PROC_CATEGORY_PI:
        case UTF8PROC_CATEGORY_PF:
        case UTF8PROC_CATEGORY_PO: return true;
        default: return false;
    }
}

bool is_ascii_punctuation(int32_t cp) {
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

bool is_digit(int32_t cp) {
    auto c = category(cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_control(int32_t cp) {
    auto c = category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
           c == UTF8PROC_CATEGORY_CO;
}

bool is_mark_nonspacing(int32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_cjk(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::string normalize(std::string_view s, NormalForm form) {
    int options = UTF8PROC_STABLE;
    switch (form) {
        case NormalForm::kNfc: options |= UTF8PROC_COMPOSE; break;
        case NormalForm::kNfd: options |= UTF8PROC_DECOMPOSE; break;
        case NormalForm::kNfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
        case NormalForm::kNfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
    }
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &out,
                     static_cast<utf8proc_option_t>(options));
    if (n < 0) return std::string(s);  // callers pass valid UTF-8; keep the input rather than lose it
    std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> holder(out, &std::free);
    return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

std::string to_lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        size_t len;
        int32_t cp = decode_utf8(s, pos, len);
        pos += len;
        if (cp < 0) cp = 0xFFFD;
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
        } else if (cp == 0x130) {  // the one full lowercase mapping of more than one code point
            out.append("i\xCC\x87");
        } else {
            append_utf8(out, utf8proc_tolower(cp));
        }
    }
    return out;
}

}  // namespace taco::unicode
