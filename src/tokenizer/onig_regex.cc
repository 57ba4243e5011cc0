#include "tokenizer/onig_regex.h"

#include <mutex>

#include <oniguruma.h>

#include "tokenizer/unicode_utils.h"

namespace taco {

struct OnigRegex::State {
    regex_t* regex = nullptr;
};

namespace {
void init_oniguruma() {
    static std::once_flag once;
    std::call_once(once, [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
        onig_initialize(encodings, 1);
    });
}
}  // namespace

OnigRegex::~OnigRegex() {
    if (!state_) return;
    if (state_->regex) onig_free(state_->regex);
}

Result<std::unique_ptr<OnigRegex>> OnigRegex::compile(const std::string& pattern) {
    init_oniguruma();
    std::unique_ptr<OnigRegex> re(new OnigRegex());
    re->pattern_ = pattern;
    re->state_ = std::make_unique<State>();
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

bool OnigRegex::search(std::string_view text, size_t from, size_t& start, size_t& end) const {
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

std::vector<std::pair<size_t, size_t>> OnigRegex::find_all(std::string_view text) const {
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
