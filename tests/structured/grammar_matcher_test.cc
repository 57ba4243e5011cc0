#include "structured/grammar_matcher.h"

#include <random>

#include <gtest/gtest.h>

#include "structured_test_util.h"

namespace taco::structured {
namespace {

using testing::bit;
using testing::regex_grammar;
using testing::vocab_of;

std::shared_ptr<const CompiledGrammar> compile(const std::string& pattern, std::shared_ptr<const TokenVocab> vocab,
                                               bool precompute = true) {
    auto g = regex_grammar(pattern);
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    return std::make_shared<const CompiledGrammar>(std::move(*g), std::move(vocab), precompute);
}

std::vector<uint32_t> mask_of(GrammarMatcher& m) {
    std::vector<uint32_t> words(size_t(m.grammar().vocab().num_mask_words()));
    m.fill_next_token_bitmask(words);
    return words;
}

TEST(GrammarMatcher, MaskAllowsExactlyTheTokensThatKeepTheMatchAlive) {
    // ids:                  0    1     2     3      4    5     6 (EOS)
    auto vocab = vocab_of({"a", "ab", "b", "abc", "c", "ba", "<eos>"});
    for (bool precompute : {true, false}) {
        GrammarMatcher m(compile("ab*c?", vocab, precompute), {6});
        auto words = mask_of(m);
        EXPECT_TRUE(bit(words, 0) && bit(words, 1) && bit(words, 3));
        EXPECT_FALSE(bit(words, 2) || bit(words, 4) || bit(words, 5) || bit(words, 6));
        ASSERT_TRUE(m.accept_token(1));  // "ab"
        words = mask_of(m);
        EXPECT_TRUE(bit(words, 2) && bit(words, 4) && bit(words, 6));  // more b, the c, or the end
        EXPECT_FALSE(bit(words, 0) || bit(words, 1) || bit(words, 5));
        EXPECT_FALSE(m.accept_token(0));
        ASSERT_TRUE(m.accept_token(4));  // "c": nothing can follow
        EXPECT_TRUE(m.is_terminated());
        words = mask_of(m);
        EXPECT_TRUE(bit(words, 6));
        EXPECT_FALSE(bit(words, 2) || bit(words, 4));
        m.rollback(1);
        EXPECT_FALSE(m.is_terminated());
        ASSERT_TRUE(m.accept_token(6));
        EXPECT_TRUE(m.is_terminated());
        EXPECT_EQ(m.num_accepted(), 2);
    }
}

TEST(GrammarMatcher, PaddingIdsAndEmptyTokensAreNeverAllowed) {
    std::vector<std::optional<std::string>> bytes = {"a", std::nullopt, ""};
    auto vocab = std::make_shared<const TokenVocab>(bytes, 40);  // 40 logits, 3 tokenizer ids
    GrammarMatcher m(compile("a*", vocab), {});
    auto words = mask_of(m);
    ASSERT_EQ(words.size(), 2u);
    EXPECT_TRUE(bit(words, 0));
    for (int id = 1; id < 40; ++id) EXPECT_FALSE(bit(words, id)) << id;
    EXPECT_FALSE(m.accept_token(1));
    EXPECT_FALSE(m.accept_token(39));
}

// Recursive grammars: the precomputed masks with the uncertain tokens checked at run time give the same mask as
// a full search at every step of random walks.
TEST(GrammarMatcher, PrecomputedMasksEqualFullSearchOnRandomWalks) {
    GrammarBuilder b;
    const int32_t value = b.add_rule("value");
    const int32_t list = b.add_rule("list");
    b.set_body(value, b.alt({b.literal("x"), b.literal("yy"), b.call(list)}));
    // list ::= "[" (value ("," value)*)? "]"
    Fragment items = b.seq(b.call(value), b.star(b.seq(b.literal(","), b.call(value))));
    b.set_body(list, b.seq(b.seq(b.literal("["), b.optional(items)), b.literal("]")));
    auto g = b.finish(value);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto vocab =
        vocab_of({"[", "]", ",", "x", "y", "yy", "[x", "x]", "],", "]]", "[[", ",x", "x,y", "yy]", "[]", "<e>"});
    auto fast = std::make_shared<const CompiledGrammar>(*g, vocab, true);
    auto slow = std::make_shared<const CompiledGrammar>(*g, vocab, false);
    std::mt19937 rng(7);
    for (int walk = 0; walk < 200; ++walk) {
        GrammarMatcher a(fast, {15}), s(slow, {15});
        std::string text;
        for (int step = 0; step < 30 && !a.is_terminated(); ++step) {
            const auto wa = mask_of(a), ws = mask_of(s);
            ASSERT_EQ(wa, ws) << "after '" << text << "'";
            std::vector<int32_t> allowed;
            for (int32_t id = 0; id < 16; ++id)
                if (bit(wa, id)) allowed.push_back(id);
            ASSERT_FALSE(allowed.empty()) << text;
            const int32_t token = allowed[rng() % allowed.size()];
            ASSERT_TRUE(a.accept_token(token));
            ASSERT_TRUE(s.accept_token(token));
            if (token != 15) text += vocab->bytes(token);
        }
        // Every prefix the masks allowed is a prefix of the language: a finished walk is in it.
        if (a.is_terminated()) {
            EXPECT_TRUE(testing::matches(*g, text)) << text;
        }
    }
}

TEST(GrammarMatcher, LeftRecursionIsRefusedNamingTheRule) {
    GrammarBuilder b;
    const int32_t expr = b.add_rule("expr");
    b.set_body(expr, b.alt({b.seq(b.call(expr), b.literal("+x")), b.literal("x")}));
    auto g = b.finish(expr);
    ASSERT_FALSE(g.is_ok());
    EXPECT_NE(g.status().message().find("'expr' is left-recursive"), std::string::npos) << g.status().message();
}

TEST(GrammarMatcher, AnEmptyLanguageIsRefused) {
    GrammarBuilder b;
    const int32_t r = b.add_rule("root");
    b.set_body(r, b.alt({}));
    EXPECT_FALSE(b.finish(r).is_ok());
}

// S ::= "a" S "b" | "a" S "c" | "": after n a's, 2^n stacks (each level returns to a "b" or a "c"); the set is cut
// off instead of doubling at every byte.
TEST(GrammarMatcher, ExponentiallyAmbiguousGrammarsAreCutOffNotSlowedDown) {
    GrammarBuilder b;
    const int32_t s = b.add_rule("s");
    b.set_body(s, b.alt({b.seq(b.seq(b.literal("a"), b.call(s)), b.literal("b")),
                         b.seq(b.seq(b.literal("a"), b.call(s)), b.literal("c")), b.empty()}));
    auto g = b.finish(s);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto compiled = std::make_shared<const CompiledGrammar>(std::move(*g), vocab_of({"a", "b", "c"}), true);
    GrammarMatcher m(compiled, {});
    int accepted = 0;
    while (accepted < 100 && m.accept_token(0)) ++accepted;
    EXPECT_GE(accepted, 10);  // 2^12 = kMaxStacks
    EXPECT_LE(accepted, 13);
}

TEST(GrammarMatcher, StatesAreClassifiedOnFirstUseAndShared) {
    auto g = regex_grammar("[a-c]{50}");
    ASSERT_TRUE(g.is_ok());
    auto vocab = vocab_of({"a", "b", "c", "ab", "abc"});
    auto compiled = std::make_shared<const CompiledGrammar>(std::move(*g), vocab, true);
    EXPECT_EQ(compiled->num_classified_states(), 1);  // the start only
    GrammarMatcher m(compiled, {});
    std::vector<uint32_t> words(1);
    for (int i = 0; i < 5; ++i) {
        m.fill_next_token_bitmask(words);
        ASSERT_TRUE(m.accept_token(0));
    }
    const int64_t classified = compiled->num_classified_states();
    EXPECT_EQ(classified, 5);  // the five positions masked
    GrammarMatcher other(compiled, {});
    for (int i = 0; i < 5; ++i) {
        other.fill_next_token_bitmask(words);
        ASSERT_TRUE(other.accept_token(0));
    }
    EXPECT_EQ(compiled->num_classified_states(), classified);
}

}  // namespace
}  // namespace taco::structured
