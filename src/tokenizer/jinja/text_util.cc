#include "tokenizer/jinja/text_util.h"

#include <algorithm>

#include <utf8proc.h>

#include "tokenizer/unicode_utils.h"

namespace taco::jinja {

char32_t decode_utf8(std::string_view s, size_t pos, size_t* length) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    unsigned char c = byte(pos);
    size_t need = 0;
    char32_t cp = 0;
    if (c < 0x80) {
        *length = 1;
        return c;
    } else if ((c & 0xE0) == 0xC0) {
        need = 1;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        need = 2;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        need = 3;
        cp = c & 0x07;
    } else {
        *length = 1;
        return c;
    }
    if (pos + need >= s.size()) {
        *length = 1;
        return c;
    }
    for (size_t k = 1; k <= need; ++k) {
        unsigned char cc = byte(pos + k);
        if ((cc & 0xC0) != 0x80) {
            *length = 1;
            return c;
        }
        cp = (cp << 6) | (cc & 0x3F);
    }
    *length = need + 1;
    return cp;
}

void append_utf8(char32_t cp, std::string& out) { unicode::append_utf8(out, int32_t(cp)); }

std::vector<char32_t> to_code_points(std::string_view s) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        size_t len = 1;
        out.push_back(decode_utf8(s, pos, &len));
        pos += len;
    }
    return out;
}

std::string from_code_points(const std::vector<char32_t>& cps) {
    std::string out;
    out.reserve(cps.size());
    for (char32_t cp : cps) append_utf8(cp, out);
    return out;
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (size_t pos = 0; pos < s.size();) {
        size_t len = 1;
        decode_utf8(s, pos, &len);
        pos += len;
        ++n;
    }
    return n;
}

namespace {

utf8proc_category_t category(char32_t cp) {
    if (cp > 0x10FFFF) return UTF8PROC_CATEGORY_CN;
    return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

}  // namespace

bool is_python_space(char32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85) return true;
    if (cp < 0x80) return false;
    auto cat = category(cp);
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_python_printable(char32_t cp) {
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    switch (category(cp)) {
        case UTF8PROC_CATEGORY_CC:
        case UTF8PROC_CATEGORY_CF:
        case UTF8PROC_CATEGORY_CS:
        case UTF8PROC_CATEGORY_CO:
        case UTF8PROC_CATEGORY_CN:
        case UTF8PROC_CATEGORY_ZL:
        case UTF8PROC_CATEGORY_ZP:
        case UTF8PROC_CATEGORY_ZS: return false;
        default: return true;
    }
}

bool is_python_alpha(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    auto cat = category(cp);
    return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
           cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

bool is_python_digit(char32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return category(cp) == UTF8PROC_CATEGORY_ND;
}

bool is_python_alnum(char32_t cp) {
    if (is_python_alpha(cp) || is_python_digit(cp)) return true;
    auto cat = category(cp);
    return cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool category_is_title(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_LT; }

bool is_python_lower(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_LL; }
bool is_python_upper(char32_t cp) { return category(cp) == UTF8PROC_CATEGORY_LU; }

char32_t to_upper(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    if (cp > 0x10FFFF) return cp;
    return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}

char32_t to_lower(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    if (cp > 0x10FFFF) return cp;
    return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

namespace {

// Python's full case mappings (SpecialCasing.txt) where they differ from the one-code-point mapping.
const char* special_upper(char32_t cp) {
    switch (cp) {
        case 0xDF: return "SS";
        case 0x149: return "\u02BCN";
        case 0x1F0: return "J\u030C";
        case 0xFB00: return "FF";
        case 0xFB01: return "FI";
        case 0xFB02: return "FL";
        case 0xFB03: return "FFI";
        case 0xFB04: return "FFL";
        case 0xFB05:
        case 0xFB06: return "ST";
        default: return nullptr;
    }
}

const char* special_title(char32_t cp) {
    switch (cp) {
        case 0xDF: return "Ss";
        case 0xFB00: return "Ff";
        case 0xFB01: return "Fi";
        case 0xFB02: return "Fl";
        case 0xFB03: return "Ffi";
        case 0xFB04: return "Ffl";
        case 0xFB05:
        case 0xFB06: return "St";
        default: return nullptr;
    }
}

void append_upper(char32_t cp, std::string& out) {
    if (const char* s = special_upper(cp)) {
        out += s;
    } else {
        append_utf8(to_upper(cp), out);
    }
}

void append_lower(char32_t cp, std::string& out) {
    if (cp == 0x130) {
        out += "i\u0307";
    } else {
        append_utf8(to_lower(cp), out);
    }
}

void append_title(char32_t cp, std::string& out) {
    if (const char* s = special_title(cp)) {
        out += s;
    } else if (cp < 0x80 || cp > 0x10FFFF) {
        append_utf8(to_upper(cp), out);
    } else {
        append_utf8(static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))), out);
    }
}

}  // namespace

std::string str_upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t cp : to_code_points(s)) append_upper(cp, out);
    return out;
}

std::string str_lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t cp : to_code_points(s)) append_lower(cp, out);
    return out;
}

std::string str_capitalize(std::string_view s) {
    std::string out;
    bool first = true;
    for (char32_t cp : to_code_points(s)) {
        if (first) {
            append_title(cp, out);
        } else {
            append_lower(cp, out);
        }
        first = false;
    }
    return out;
}

std::string str_title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (char32_t cp : to_code_points(s)) {
        bool cased = is_python_lower(cp) || is_python_upper(cp) || category_is_title(cp);
        if (previous_cased) {
            append_lower(cp, out);
        } else {
            append_title(cp, out);
        }
        previous_cased = cased;
    }
    return out;
}

std::string str_swapcase(std::string_view s) {
    std::string out;
    for (char32_t cp : to_code_points(s)) {
        if (is_python_upper(cp)) {
            append_utf8(to_lower(cp), out);
        } else if (is_python_lower(cp)) {
            append_utf8(to_upper(cp), out);
        } else {
            append_utf8(cp, out);
        }
    }
    return out;
}

std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::vector<char32_t> cps = to_code_points(s);
    std::vector<char32_t> strip_set;
    if (chars) strip_set = to_code_points(*chars);
    auto strip = [&](char32_t cp) {
        if (!chars) return is_python_space(cp);
        return std::find(strip_set.begin(), strip_set.end(), cp) != strip_set.end();
    };
    size_t begin = 0, end = cps.size();
    if (left)
        while (begin < end && strip(cps[begin])) ++begin;
    if (right)
        while (end > begin && strip(cps[end - 1])) --end;
    return from_code_points(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end));
}

std::vector<std::string> str_splitlines(std::string_view s) {
    std::vector<std::string> lines;
    std::vector<char32_t> cps = to_code_points(s);
    std::vector<char32_t> current;
    for (size_t i = 0; i < cps.size(); ++i) {
        char32_t cp = cps[i];
        bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                        cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!is_break) {
            current.push_back(cp);
            continue;
        }
        if (cp == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        lines.push_back(from_code_points(current));
        current.clear();
    }
    if (!current.empty()) lines.push_back(from_code_points(current));
    return lines;
}

}  // namespace taco::jinja
