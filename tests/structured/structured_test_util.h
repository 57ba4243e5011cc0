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
