// vLLM's request fields that taco-llm does not implement yet: set to anything but their neutral value they are a
// 400 naming the field (never an answer that ignores them); neutral values are accepted.
#include <gtest/gtest.h>

#include "server/vllm_fields.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

TEST(VllmFields, EachUnimplementedFieldIsNamedUnlessNeutral) {
    const std::pair<const char*, json> set[] = {
        {"use_beam_search", true},          {"length_penalty", 0.5},
        {"bad_words", json::array({"no"})}, {"allowed_token_ids", {1, 2}},
        {"truncate_prompt_tokens", 8},      {"return_tokens_as_token_ids", true},
        {"logits_processors", {"x.y"}},     {"priority", 3}};
    for (const auto& [field, value] : set) {
        for (bool chat : {false, true}) {
            const auto found = unimplemented_vllm_field(json{{"prompt", "hi"}, {field, value}}, chat);
            ASSERT_TRUE(found.has_value()) << field;
            EXPECT_EQ(found->field, field);
            EXPECT_NE(found->message.find(std::string("'") + field + "'"), std::string::npos) << found->message;
        }
    }
    const std::pair<const char*, json> chat_only[] = {
        {"continue_final_message", true}, {"chat_template", "{{ messages }}"}, {"reasoning_effort", "low"}};
    for (const auto& [field, value] : chat_only) {
        EXPECT_TRUE(unimplemented_vllm_field(json{{field, value}}, true).has_value()) << field;
        EXPECT_FALSE(unimplemented_vllm_field(json{{field, value}}, false).has_value()) << field;
    }
    // What clients send for "not used".
    const json neutral = {{"use_beam_search", false},           {"length_penalty", 1.0},
                          {"bad_words", json::array()},         {"allowed_token_ids", nullptr},
                          {"truncate_prompt_tokens", nullptr},  {"return_tokens_as_token_ids", false},
                          {"logits_processors", json::array()}, {"priority", 0},
                          {"continue_final_message", false},    {"documents", nullptr},
                          {"reasoning_effort", nullptr},        {"chat_template", nullptr}};
    EXPECT_FALSE(unimplemented_vllm_field(neutral, true).has_value());
}

TEST(VllmFields, TheServerAnswers400NamingTheFieldAndServesTheNeutralForm) {
    TestServer s("tests/data/models/llama");
    const json base = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}};
    json banned = base;
    banned["bad_words"] = {"never"};
    const HttpResult refused = post(s.port, "/v1/completions", banned);
    EXPECT_EQ(refused.status, 400) << refused.body;
    const json error = json::parse(refused.body)["error"];
    EXPECT_EQ(error["param"], "bad_words") << refused.body;
    EXPECT_NE(error["message"].get<std::string>().find("not supported"), std::string::npos) << refused.body;
    json neutral = base;
    neutral["bad_words"] = json::array();
    neutral["use_beam_search"] = false;
    EXPECT_EQ(post(s.port, "/v1/completions", neutral).status, 200);
}

}  // namespace
}  // namespace taco::server::testing
