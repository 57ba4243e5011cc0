// A compiled regex with the search semantics of the Rust `onig` crate's find_iter, which the Hugging Face
// tokenizers library uses for every Regex pattern: leftmost matches, empty matches allowed except right after the
// previous match. Patterns run on Oniguruma, as in tokenizers; the common subset that PCRE2 reads the same way
// (\p{..} classes, \s spelled out as Oniguruma's Unicode set, lookahead) runs on PCRE2's JIT instead, which is
// several times faster. The parity tests hold both to the Hugging Face goldens.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace taco {

class Regex {
public:
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Error names the pattern and the engine's message. `allow_pcre2` false forces Oniguruma.
    static Result<std::unique_ptr<Regex>> compile(const std::string& pattern, bool allow_pcre2 = true);

    // Byte ranges [start, end) of successive matches in `text` (valid UTF-8).
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
    // First match at or after `from`; false if none.
    bool search(std::string_view text, size_t from, size_t& start, size_t& end) const;
    const std::string& pattern() const { return pattern_; }
    bool uses_pcre2() const;

private:
    Regex() = default;
    struct State;
    std::string pattern_;
    std::unique_ptr<State> state_;
};

// The PCRE2 spelling of an Oniguruma pattern, or "" when the pattern uses something outside the translated subset.
std::string translate_to_pcre2(const std::string& onig_pattern);

}  // namespace taco
