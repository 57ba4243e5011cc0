#include "structured/ebnf_parser.h"

#include <gtest/gtest.h>

#include "structured_test_util.h"

namespace taco::structured {
namespace {

using testing::matches;

Grammar ebnf(const std::string& text) {
    auto g = parse_ebnf(text);
    EXPECT_TRUE(g.is_ok()) << text << ": " << g.status().message();
    return g.is_ok() ? std::move(*g) : Grammar{};
}

TEST(EbnfParser, ReadsGbnfWithClassesQuantifiersAndRecursion) {
    const Grammar g = ebnf(R"g(
        # arithmetic over small numbers
        root ::= expr
        expr ::= term ([+-] term)*
        term ::= num | "(" expr ")"
        num  ::= [1-9] [0-9]{0,2}
    )g");
    EXPECT_TRUE(matches(g, "1+(23-4)"));
    EXPECT_TRUE(matches(g, "((999))"));
    EXPECT_FALSE(matches(g, "1+"));
    EXPECT_FALSE(matches(g, "1000"));
    EXPECT_FALSE(matches(g, "(1"));
    const Grammar strings = ebnf("root ::= \"say \\\"hi\\\"\\n\" 'x'? [^a-z]+");
    EXPECT_TRUE(matches(strings, "say \"hi\"\nx12"));
    EXPECT_FALSE(matches(strings, "say \"hi\"\nxa"));
}

TEST(EbnfParser, ReadsLarkWithOptionalsRegexesAndCommonImports) {
    const Grammar g = ebnf(R"g(
        ?start: "SELECT " cols " FROM " NAME [" WHERE " cond] // a tiny SQL
        cols: NAME (", " NAME)* | "*"
        cond: NAME " = " (SIGNED_NUMBER | ESCAPED_STRING)
        NAME: /[a-z_][a-z0-9_]*/
        %import common.SIGNED_NUMBER
        %import common.ESCAPED_STRING
    )g");
    EXPECT_TRUE(matches(g, "SELECT a, b FROM t"));
    EXPECT_TRUE(matches(g, "SELECT * FROM t WHERE x = -1.5"));
    EXPECT_TRUE(matches(g, "SELECT a FROM t WHERE x = \"y\""));
    EXPECT_FALSE(matches(g, "SELECT FROM t"));
    EXPECT_FALSE(matches(g, "SELECT a FROM 9t"));
}

TEST(EbnfParser, ErrorsNameTheProblem) {
    const std::pair<const char*, const char*> cases[] = {
        {"root ::= item", "'item' is used but not defined"},
        {"start: x\nx: x \"a\" | \"b\"", "'x' is left-recursive"},
        {"expr ::= \"a\"", "no 'root' rule"},
        {"root ::= \"a", "unterminated string"},
        {"root ::= (\"a\"", "missing ')'"},
        {"start: \"a\"\n%ignore WS", "'%ignore' is not supported"},
        {"start: a -> b\na: \"x\"", "aliases"},
        {"root ::= [a-", "missing ']'"},
        {"root ::= \"a\"{2,1}", "max below min"},
        {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
        {"start: \"a\"i", "string flags"},
    };
    for (const auto& [text, what] : cases) {
        auto g = parse_ebnf(text);
        ASSERT_FALSE(g.is_ok()) << text;
        EXPECT_NE(g.status().message().find(what), std::string::npos) << text << ": " << g.status().message();
    }
}

}  // namespace
}  // namespace taco::structured
