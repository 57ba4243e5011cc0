#include "structured/regex_compiler.h"

#include <gtest/gtest.h>

#include "structured_test_util.h"

namespace taco::structured {
namespace {

using testing::regex_grammar;
using testing::regex_matches;

TEST(RegexCompiler, MatchesLiteralsClassesAndAlternation) {
    EXPECT_TRUE(regex_matches("abc", "abc"));
    EXPECT_FALSE(regex_matches("abc", "abcd"));
    EXPECT_FALSE(regex_matches("abc", "ab"));
    EXPECT_TRUE(regex_matches("a|bc|d", "bc"));
    EXPECT_FALSE(regex_matches("a|bc|d", "b"));
    EXPECT_TRUE(regex_matches("[a-c]x[^0-9]", "bxq"));
    EXPECT_FALSE(regex_matches("[a-c]x[^0-9]", "bx5"));
    EXPECT_TRUE(regex_matches("(?:ab)+", "ababab"));
    EXPECT_FALSE(regex_matches("(?:ab)+", "aba"));
    EXPECT_TRUE(regex_matches("\\d\\d-\\w+\\s", "12-a_b "));
    EXPECT_FALSE(regex_matches("\\D", "7"));
    EXPECT_TRUE(regex_matches("a\\.b\\\\", "a.b\\"));
    EXPECT_FALSE(regex_matches("a\\.b", "axb"));
    EXPECT_TRUE(regex_matches("[\\]\\-]+", "]-]"));
    EXPECT_TRUE(regex_matches("(?<year>\\d{4})", "2024"));
}

TEST(RegexCompiler, CountedRepetitionHonoursBothBounds) {
    for (int n = 0; n <= 6; ++n) {
        const std::string text(size_t(n), 'a');
        EXPECT_EQ(regex_matches("a{2,4}", text), n >= 2 && n <= 4) << n;
        EXPECT_EQ(regex_matches("a{3}", text), n == 3) << n;
        EXPECT_EQ(regex_matches("a{2,}", text), n >= 2) << n;
        EXPECT_EQ(regex_matches("(ab|a){0,2}", text), n <= 2) << n;
    }
    EXPECT_TRUE(regex_matches("x{,3}", "x{,3}"));  // not a quantifier: literal braces, as ECMAScript reads them
    EXPECT_TRUE(regex_matches("a+?b*?c??", "aab"));
}

TEST(RegexCompiler, DotAndClassesMatchWholeUtf8CodePoints) {
    EXPECT_TRUE(regex_matches(".", "\xC3\xA9"));          // é
    EXPECT_TRUE(regex_matches(".", "\xF0\x9F\x98\x80"));  // U+1F600
    EXPECT_FALSE(regex_matches(".", "\xC3"));             // half a code point
    EXPECT_FALSE(regex_matches(".", "\n"));
    EXPECT_TRUE(regex_matches("[^a]", "\xE2\x82\xAC"));  // €
    EXPECT_TRUE(regex_matches("[\\u00e0-\\u00ff]", "\xC3\xA9"));
    EXPECT_FALSE(regex_matches("[\\u00e0-\\u00ff]", "\xC3\x80"));
    EXPECT_TRUE(regex_matches("\\u{1F600}", "\xF0\x9F\x98\x80"));
    EXPECT_FALSE(regex_matches("[^a]", "\xED\xA0\x80"));  // an encoded surrogate is not UTF-8
}

TEST(RegexCompiler, SearchModeAdmitsTextOnUnanchoredSides) {
    RegexOptions search{.search = true};
    EXPECT_TRUE(regex_matches("ab", "xxabyy", search));
    EXPECT_TRUE(regex_matches("^ab", "abyy", search));
    EXPECT_FALSE(regex_matches("^ab", "xab", search));
    EXPECT_TRUE(regex_matches("ab$", "xab", search));
    EXPECT_FALSE(regex_matches("ab$", "aby", search));
    EXPECT_TRUE(regex_matches("^ab$", "ab", search));
    EXPECT_FALSE(regex_matches("^ab$", "abb", search));
    EXPECT_TRUE(regex_matches("^(a|b)$", "b", search));
    EXPECT_FALSE(regex_grammar("^a|b$", search).is_ok());
    EXPECT_TRUE(regex_matches("^a$", "a"));  // full-match mode: the anchors change nothing
}

TEST(RegexCompiler, JsonStringModeEmitsEscapes) {
    RegexOptions json{.json_string = true};
    EXPECT_TRUE(regex_matches("a\"b", "a\\\"b", json));
    EXPECT_FALSE(regex_matches("a\"b", "a\"b", json));
    EXPECT_TRUE(regex_matches("[^x]", "\\\\", json));
    EXPECT_TRUE(regex_matches("[^x]", "\\n", json));
    EXPECT_TRUE(regex_matches("[^x]", "\\u0001", json));
    EXPECT_FALSE(regex_matches("[^x]", "\n", json));
    EXPECT_TRUE(regex_matches("[^x]", "y", json));
}

TEST(RegexCompiler, UnsupportedSyntaxIsAnErrorNamingIt) {
    const std::pair<const char*, const char*> cases[] = {
        {"(a)\\1", "backreferences"},   {"a(?=b)", "lookaround"},  {"\\bword", "word boundaries"},
        {"\\p{L}", "Unicode property"}, {"a^b", "anchors"},        {"(ab", "missing ')'"},
        {"ab)", "unbalanced"},          {"[ab", "missing ']'"},    {"*a", "nothing to repeat"},
        {"a{3,2}", "max below min"},    {"[z-a]", "out of order"}, {"a**", "nothing to repeat"},
    };
    for (const auto& [pattern, what] : cases) {
        auto g = regex_grammar(pattern);
        ASSERT_FALSE(g.is_ok()) << pattern;
        EXPECT_NE(g.status().message().find(what), std::string::npos) << pattern << ": " << g.status().message();
    }
}

TEST(RegexCompiler, DeepNestingAndHugeCountsAreRefusedNotCrashes) {
    EXPECT_FALSE(regex_grammar(std::string(100000, '(') + std::string(100000, ')')).is_ok());
    EXPECT_FALSE(regex_grammar("(a{1000}){1000}{1000}").is_ok());
}

}  // namespace
}  // namespace taco::structured
