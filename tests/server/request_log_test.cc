// describe_prompt: what --enable-log-requests logs of a prompt, cut to --max-log-len as vLLM cuts it.
#include <gtest/gtest.h>

#include "server/request_log.h"

namespace taco::server {
namespace {

GenerationInput text(const std::string& prompt) {
    GenerationInput input;
    input.prompt = prompt;
    return input;
}

GenerationInput ids(std::vector<int32_t> prompt_ids) {
    GenerationInput input;
    input.prompt_ids = std::move(prompt_ids);
    return input;
}

TEST(RequestLog, TextPromptsAreCutToMaxLogLenCharactersNotBytes) {
    EXPECT_EQ(describe_prompt(text("Hello\nworld"), std::nullopt), R"(prompt: "Hello\nworld")");
    EXPECT_EQ(describe_prompt(text("Hello world"), 5), R"(prompt: "Hello"...)");
    EXPECT_EQ(describe_prompt(text("Hello"), 5), R"(prompt: "Hello")");
    EXPECT_EQ(describe_prompt(text("Hello"), 0), R"(prompt: ""...)");
    // "é" and "日" are one character each (2 and 3 bytes): the cut never splits one.
    EXPECT_EQ(describe_prompt(text("\xC3\xA9\xE6\x97\xA5x"), 2), "prompt: \"\xC3\xA9\xE6\x97\xA5\"...");
}

TEST(RequestLog, TokenPromptsAreCutToMaxLogLenIds) {
    EXPECT_EQ(describe_prompt(ids({1, 2, 3}), std::nullopt), "prompt_token_ids: [1, 2, 3]");
    EXPECT_EQ(describe_prompt(ids({1, 2, 3}), 2), "prompt_token_ids: [1, 2, ...]");
    EXPECT_EQ(describe_prompt(ids({1, 2, 3}), 0), "prompt_token_ids: [...]");
    EXPECT_EQ(describe_prompt(ids({1, 2, 3}), 3), "prompt_token_ids: [1, 2, 3]");
}

}  // namespace
}  // namespace taco::server
