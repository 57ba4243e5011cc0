// parse_json refuses deep nesting before nlohmann sees it; json_excerpt quotes any value in bounded length/depth.
#include "core/json_util.h"

#include <chrono>
#include <iterator>
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

TEST(JsonUtil, OrderedParseKeepsTheOrderAndNlohmannsDuplicateRule) {
    auto parsed = parse_ordered_json(R"({"b": 1, "a": [true, null, {"z": 1, "y": 2}], "b": 3, "c": "x"})");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    // The same value nlohmann's own parser gives: a repeated key keeps its first position and takes the last value.
    EXPECT_EQ(*parsed,
              nlohmann::ordered_json::parse(R"({"b": 1, "a": [true, null, {"z": 1, "y": 2}], "b": 3, "c": "x"})"));
    EXPECT_EQ(parsed->dump(), R"({"b":3,"a":[true,null,{"z":1,"y":2}],"c":"x"})");
    EXPECT_EQ(parse_ordered_json("17")->get<int>(), 17);
    EXPECT_EQ(parse_ordered_json("[]")->dump(), "[]");
    auto bad = parse_ordered_json("{\"a\": ");
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("invalid JSON"), std::string::npos);
    auto huge = parse_ordered_json("{\"x\": [1e999]}");
    ASSERT_FALSE(huge.is_ok());
    EXPECT_NE(huge.status().message().find("number overflow"), std::string::npos) << huge.status().message();
    EXPECT_FALSE(parse_ordered_json("[1] 2").is_ok());
}

// nlohmann's ordered parse searches an object's members linearly for every key (hours for the 32 MiB a request
// may hold); ours is linear. nlohmann takes 0.5 s for 20k keys and 2.2 s for 40k here, so about 2 minutes for these
// 300k; ours well under a second.
TEST(JsonUtil, OrderedParseOfManyKeysIsLinear) {
    std::string text = "{";
    for (int i = 0; i < 300000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    text += "}";
    const auto start = std::chrono::steady_clock::now();
    auto parsed = parse_ordered_json(text);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(parsed.is_ok());
    ASSERT_EQ(parsed->size(), 300000u);
    EXPECT_EQ(parsed->begin().key(), "k0");
    EXPECT_EQ(std::prev(parsed->end()).key(), "k299999");
    EXPECT_LT(seconds, 3.0);
}

}  // namespace
}  // namespace taco
