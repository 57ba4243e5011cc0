// The regex layer: PCRE2 (fast path) reads the translated Oniguruma patterns the same way Oniguruma does, for every
// code point, and find_all keeps the onig crate's empty-match rules.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {

TEST(Regex, Pcre2AgreesWithOnigurumaOnEveryCodePointForTokenizerClasses) {
    for (const char* pattern : {"\\s", "\\S", "\\p{L}", "\\p{N}", "\\p{Lu}\\p{Ll}?", "\\p{M}", "\\p{P}|\\p{S}",
                                "[^\\s\\p{L}\\p{N}]", "[^\\r\\n\\p{L}\\p{N}]", "\\s+(?!\\S)"}) {
        auto onig = Regex::compile(pattern, false);
        auto pcre2 = Regex::compile(pattern, true);
        ASSERT_TRUE(onig.is_ok() && pcre2.is_ok()) << pattern;
        ASSERT_TRUE((*pcre2)->uses_pcre2()) << pattern;
        ASSERT_FALSE((*onig)->uses_pcre2());
        size_t diffs = 0;
        for (int32_t cp = 0; cp < 0x110000; ++cp) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            std::string s = unicode::to_utf8(cp) + "a";
            if ((*onig)->find_all(s) != (*pcre2)->find_all(s) && diffs++ < 3)
                ADD_FAILURE() << pattern << " U+" << std::hex << cp;
        }
        EXPECT_EQ(diffs, 0u) << pattern;
    }
}

TEST(Regex, UntranslatableConstructsStayOnOniguruma) {
    for (const char* pattern : {"\\w+", "\\d", "[[:alpha:]]", "\\h", "[^\\S]", "\\p{Greek}", "\\bx"}) {
        EXPECT_EQ(translate_to_pcre2(pattern), "") << pattern;
        auto re = Regex::compile(pattern);
        ASSERT_TRUE(re.is_ok()) << pattern;
        EXPECT_FALSE((*re)->uses_pcre2()) << pattern;
    }
}

TEST(Regex, EmptyMatchesFollowTheOnigCrate) {
    for (bool pcre2 : {false, true}) {
        auto re = Regex::compile("x*", pcre2);
        ASSERT_TRUE(re.is_ok());
        using R = std::vector<std::pair<size_t, size_t>>;
        // An empty match right after a match is skipped; elsewhere empty matches are reported.
        EXPECT_EQ((*re)->find_all("axxb"), (R{{0, 0}, {1, 3}, {4, 4}})) << "pcre2=" << pcre2;
    }
}

TEST(Regex, BadPatternNamesIt) {
    auto re = Regex::compile("(a");
    ASSERT_FALSE(re.is_ok());
    EXPECT_NE(re.status().message().find("(a"), std::string::npos);
}

}  // namespace
}  // namespace taco
