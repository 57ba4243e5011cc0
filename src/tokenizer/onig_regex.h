// A compiled Oniguruma regex with the search semantics of the Rust `onig` crate's find_iter, which the Hugging Face
// tokenizers library uses for every Regex pattern: leftmost matches, empty matches allowed except right after the
// previous match.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace taco {

class OnigRegex {
public:
    ~OnigRegex();
    OnigRegex(const OnigRegex&) = delete;
    OnigRegex& operator=(const OnigRegex&) = delete;

    // Error names the pattern and Oniguruma's message.
    static Result<std::unique_ptr<OnigRegex>> compile(const std::string& pattern);

    // Byte ranges [start, end) of successive matches in `text` (valid UTF-8).
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
    // First match at or after `from`; false if none.
    bool search(std::string_view text, size_t from, size_t& start, size_t& end) const;
    const std::string& pattern() const { return pattern_; }

private:
    OnigRegex() = default;
    struct State;
    std::string pattern_;
    std::unique_ptr<State> state_;
};

}  // namespace taco
