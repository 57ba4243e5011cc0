// parse_json refuses deep nesting before nlohmann sees it; json_excerpt quotes any value in bounded length/depth.
#include "core/json_util.h"

#include <string>

#include <gtest/gtest.h>

namespace taco {
namespace {

std::string nested(int depth, char open = '[', char close = ']') {
    return std::string(size_t(depth), open) + std::string(size_t(depth), close);
}

TEST(JsonUtil, NestingPastTheLimitIsAnErrorNamingIt) {
    auto deep = parse_json(nested(100000));
    ASSERT_FALSE(deep.is_ok());
    EXPECT_NE(deep.status().message().find("nested deeper than 128 levels (at byte 128)"), std::string::npos)
        << deep.status().message();
    EXPECT_FALSE(parse_ordered_json("{\"a\": " + nested(129) + "}").is_ok());
    EXPECT_TRUE(parse_json(nested(limits::kMaxJsonDepth)).is_ok());
    EXPECT_FALSE(parse_json(nested(limits::kMaxJsonDepth + 1)).is_ok());
}

TEST(JsonUtil, BracketsInsideStringsDoNotCount) {
    const std::string text = "[\"" + std::string(1000, '[') + "\\\"[[[\"]";
    auto parsed = parse_json(text);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_EQ((*parsed)[0].get<std::string>().size(), 1004u);
}

TEST(JsonUtil, ParseErrorsAndOutOfRangeNumbersAreStatuses) {
    auto bad = parse_json("{\"a\": ");
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("invalid JSON"), std::string::npos);
    auto huge = parse_json("[1e999]");
    ASSERT_FALSE(huge.is_ok());
    EXPECT_NE(huge.status().message().find("invalid JSON"), std::string::npos) << huge.status().message();
}

TEST(JsonUtil, ExcerptIsBoundedInDepthAndLength) {
    EXPECT_EQ(json_excerpt(*parse_json(nested(100))), "[[[[[...]]]]]");
    EXPECT_EQ(json_excerpt(*parse_json("{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": 1}}}}}")),
              "{\"a\":{\"b\":{\"c\":{\"d\":{...}}}}}");
    EXPECT_EQ(json_excerpt(*parse_json("[1, \"x\", null, [], {}]")), "[1,\"x\",null,[],{}]");
    nlohmann::json big = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) big.push_back("a string of some length");
    const std::string excerpt = json_excerpt(big);
    EXPECT_EQ(excerpt.size(), limits::kMaxJsonExcerptChars + 3);
    EXPECT_EQ(excerpt.substr(excerpt.size() - 3), "...");
    EXPECT_EQ(json_excerpt(nlohmann::json(std::string(10000, 'x'))).size(), limits::kMaxJsonExcerptChars + 3);
    EXPECT_EQ(json_excerpt(nlohmann::json(std::string("\xff"))), "\"\xEF\xBF\xBD\"");  // invalid UTF-8 replaced
}

TEST(JsonUtil, ExcerptOfAValueBuiltDeeperThanTheParserAllowsStaysShallow) {
    nlohmann::json deep = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) {
        nlohmann::json outer = nlohmann::json::array();
        outer.push_back(std::move(deep));
        deep = std::move(outer);
    }
    EXPECT_EQ(json_excerpt(deep), "[[[[[...]]]]]");
}

}  // namespace
}  // namespace taco
