#include "tokenizer/regex.h"

#include <mutex>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <oniguruma.h>
#include <pcre2.h>

#include "tokenizer/unicode_utils.h"

namespace taco {

struct Regex::State {
    regex_t* regex = nullptr;     // Oniguruma, when PCRE2 is not used
    pcre2_code* pcre2 = nullptr;  // JIT-compiled
};

namespace {
// Oniguruma's \s for UTF-8 (the Unicode White_Space set), as the inside of a character class.
constexpr const char* kSpaceSet =
    "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
}  // namespace

std::string translate_to_pcre2(const std::string& p) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < p.size(); ++i) {
        char c = p[i];
        if (c == '[') {
            if (in_class) return "";  // nested classes / POSIX brackets: leave to Oniguruma
            in_class = true;
            out += c;
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            if (i + 1 < p.size() && p[i + 1] == ']') return "";  // literal ']' first: Oniguruma-specific
            continue;
        }
        if (c == ']' && in_class) {
            in_class = false;
            out += c;
            continue;
        }
        if (c != '\\') {
            out += c;
            continue;
        }
        if (i + 1 >= p.size()) return "";
        char e = p[++i];
        switch (e) {
            case 's': out += in_class ? std::string(kSpaceSet) : "[" + std::string(kSpaceSet) + "]"; break;
            case 'S':
                if (in_class) return "";
                out += "[^" + std::string(kSpaceSet) + "]";
                break;
            case 'p':
            case 'P': {
                size_t close = p.find('}', i);
                if (i + 1 >= p.size() || p[i + 1] != '{' || close == std::string::npos) return "";
                std::string name = p.substr(i + 2, close - i - 2);
                static const char* kAllowed[] = {"L",  "Lu", "Ll", "Lt", "Lm", "Lo", "M",  "Mn", "Mc", "Me", "N", "Nd",
                                                 "Nl", "No", "P",  "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm",
                                                 "Sc", "Sk", "So", "Z",  "Zs", "Zl", "Zp", "C",  "Cc", "Cf"};
                bool ok = false;
                for (const char* a : kAllowed) ok = ok || name == a;
                if (!ok) return "";
                out += p.substr(i - 1, close - i + 2);
                i = close;
                break;
            }
            case 'r': out += "\\r"; break;
            case 'n': out += "\\n"; break;
            case 't': out += "\\t"; break;
            case 'f': out += "\\f"; break;
            case 'v': out += "\\x0B"; break;
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
                    return "";  // \w, \d, \b, ...
                out += '\\';
                out += e;  // an escaped punctuation character means itself in both
        }
    }
    if (in_class) return "";
    return out;
}

namespace {
void init_oniguruma() {
    static std::once_flag once;
    std::call_once(once, [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
        onig_initialize(encodings, 1);
    });
}
}  // namespace

Regex::~Regex() {
    if (!state_) return;
    if (state_->regex) onig_free(state_->regex);
    if (state_->pcre2) pcre2_code_free(state_->pcre2);
}

bool Regex::uses_pcre2() const { return state_->pcre2 != nullptr; }

Result<std::unique_ptr<Regex>> Regex::compile(const std::string& pattern, bool allow_pcre2) {
    std::unique_ptr<Regex> re(new Regex());
    re->pattern_ = pattern;
    re->state_ = std::make_unique<State>();
    if (allow_pcre2) {
        std::string translated = translate_to_pcre2(pattern);
        if (!translated.empty()) {
            int code;
            PCRE2_SIZE offset;
            pcre2_code* compiled = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                                 PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &code, &offset, nullptr);
            if (compiled && pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE) == 0) {
                re->state_->pcre2 = compiled;
            } else if (compiled) {
                pcre2_code_free(compiled);  // no JIT here: Oniguruma is as good
            }
        }
    }
    // Oniguruma is compiled in every case: it is the reference, and the fallback should PCRE2 fail on some input
    // (JIT stack exhausted).
    init_oniguruma();
    OnigErrorInfo info;
    auto begin = reinterpret_cast<const OnigUChar*>(pattern.data());
    int rc = onig_new(&re->state_->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                      ONIG_SYNTAX_DEFAULT, &info);
    if (rc != ONIG_NORMAL) {
        OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(message, rc, &info);
        re->state_->regex = nullptr;
        return error("invalid regex '{}': {}", pattern, reinterpret_cast<const char*>(message));
    }
    return re;
}

bool Regex::search(std::string_view text, size_t from, size_t& start, size_t& end) const {
    if (state_->pcre2) {
        struct Pcre2Thread {
            pcre2_match_data* data = pcre2_match_data_create(4, nullptr);
            pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
            pcre2_match_context* context = pcre2_match_context_create(nullptr);
            Pcre2Thread() { pcre2_jit_stack_assign(context, nullptr, stack); }
            ~Pcre2Thread() {
                pcre2_match_context_free(context);
                pcre2_jit_stack_free(stack);
                pcre2_match_data_free(data);
            }
        };
        thread_local Pcre2Thread t;
        int rc = pcre2_jit_match(state_->pcre2, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), from,
                                 PCRE2_NO_UTF_CHECK, t.data, t.context);
        if (rc == PCRE2_ERROR_NOMATCH) return false;
        if (rc > 0) {
            PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(t.data);
            start = ovector[0];
            end = ovector[1];
            return true;
        }
        // any other error (resource limits): Oniguruma below gives the answer
    }
    auto begin = reinterpret_cast<const OnigUChar*>(text.data());
    auto stop = begin + text.size();
    // A compiled regex may be searched from several threads at once; each thread owns its match region.
    thread_local std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(
        onig_region_new(), [](OnigRegion* r) { onig_region_free(r, 1); });
    int rc = onig_search(state_->regex, begin, stop, begin + from, stop, region.get(), ONIG_OPTION_NONE);
    if (rc < 0) return false;
    start = static_cast<size_t>(region->beg[0]);
    end = static_cast<size_t>(region->end[0]);
    return true;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
    std::vector<std::pair<size_t, size_t>> matches;
    size_t last_end = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= text.size()) {
        size_t s, e;
        if (!search(text, last_end, s, e)) break;
        if (s == e && have_last && last_match_end == e) {
            // An empty match right after the previous one: step one character forward.
            size_t len = last_end < text.size() ? unicode::valid_sequence_length(text, last_end) : 1;
            last_end += len == 0 ? 1 : len;
            continue;
        }
        last_end = e;
        last_match_end = e;
        have_last = true;
        matches.emplace_back(s, e);
    }
    return matches;
}

}  // namespace taco
