// Helpers of the structured-output tests: grammars from regexes, small vocabularies, full-text matching.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "structured/grammar_matcher.h"
#include "structured/regex_compiler.h"

namespace taco::structured::testing {

inline Result<Grammar> regex_grammar(const std::string& pattern, RegexOptions options = {}) {
    GrammarBuilder b;
    const int32_t root = b.add_rule("root");
    auto f = compile_regex(pattern, b, options);
    if (!f) return f.status();
    b.set_body(root, *f);
    return b.finish(root);
}

// A vocabulary of the given token strings (id = index).
inline std::shared_ptr<const TokenVocab> vocab_of(const std::vector<std::string>& tokens, int64_t extra_ids = 0) {
    std::vector<std::optional<std::string>> bytes(tokens.begin(), tokens.end());
    return std::make_shared<const TokenVocab>(std::move(bytes), int64_t(tokens.size()) + extra_ids);
}

// Every byte value and a few multi-byte tokens: any text can be spelled byte by byte.
inline std::shared_ptr<const TokenVocab> byte_vocab() {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, char(b)));
    return vocab_of(tokens);
}

// Does the grammar match the whole text?
inline bool matches(const Grammar& grammar, const std::string& text) {
    auto compiled = std::make_shared<const CompiledGrammar>(grammar, byte_vocab(), false);
    GrammarMatcher m(compiled, {});
    return m.accept_bytes(text) && m.can_finish();
}

inline bool regex_matches(const std::string& pattern, const std::string& text, RegexOptions options = {}) {
    auto g = regex_grammar(pattern, options);
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    return g.is_ok() && matches(*g, text);
}

inline bool bit(const std::vector<uint32_t>& words, int32_t id) { return (words[size_t(id) / 32] >> (id % 32)) & 1; }

}  // namespace taco::structured::testing

#include <random>

namespace taco::structured::testing {

// Single bytes, some JSON-ish multi-byte tokens, and last an end token with no bytes (its id: vocab size - 1).
inline std::shared_ptr<const TokenVocab> json_vocab() {
    std::vector<std::optional<std::string>> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, char(b)));
    for (const char* t :
         {"{\"", "\":", "\",",  "\"}",  "true", "false", "null", "12",    "-3", ".5",  "\"a",      ", \"", "}]",
          "abc", " ",   "\n  ", "\"\"", "[]",   "{}",    "e+7",  "2024-", "01", ":30", "\xC3\xA9", "\\n",  "\\u00"})
        tokens.push_back(std::string(t));
    tokens.push_back(std::nullopt);
    return std::make_shared<const TokenVocab>(std::move(tokens), int64_t(tokens.size()));
}

// Samples tokens under the masks until the match terminates (returns the text) or max_steps pass (nullopt). Closing
// bytes are favoured so that most walks end.
inline std::optional<std::string> random_walk(const std::shared_ptr<const CompiledGrammar>& compiled, std::mt19937& rng,
                                              int max_steps = 400) {
    const int32_t end_id = int32_t(compiled->vocab().vocab_size() - 1);
    GrammarMatcher m(compiled, {end_id});
    std::vector<uint32_t> words(size_t(compiled->vocab().num_mask_words()));
    std::string text;
    for (int step = 0; step < max_steps && !m.is_terminated(); ++step) {
        const int64_t count = m.fill_next_token_bitmask(words);
        EXPECT_GT(count, 0) << "no token allowed after '" << text << "'";
        if (count == 0) return std::nullopt;
        std::vector<int32_t> allowed, closing;
        for (int32_t id = 0; id < int32_t(compiled->vocab().vocab_size()); ++id) {
            if (!bit(words, id)) continue;
            allowed.push_back(id);
            const std::string& b = id == end_id ? std::string("$") : compiled->vocab().bytes(id);
            if (b.find_first_of("\"}]$") != std::string::npos) closing.push_back(id);
        }
        const bool close = !closing.empty() && rng() % 3 == 0;
        const std::vector<int32_t>& pool = close ? closing : allowed;
        const int32_t token = pool[rng() % pool.size()];
        EXPECT_TRUE(m.accept_token(token)) << token;
        if (token != end_id) text += compiled->vocab().bytes(token);
    }
    if (!m.is_terminated()) return std::nullopt;
    return text;
}

}  // namespace taco::structured::testing
