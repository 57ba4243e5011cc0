// /v1/chat/completions, /tokenize and /detokenize on the demo model (a real tokenizer and a ChatML template).
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kDemo = "models/demo";

json hello() { return json::array({{{"role", "user"}, {"content", "Tell me a story."}}}); }

TEST(ServerChat, ReplyUsesTheTemplatedPromptAndReportsUsage) {
    TestServer s(kDemo);
    HttpResult tokens = post(s.port, "/tokenize", {{"messages", hello()}});
    ASSERT_EQ(tokens.status, 200) << tokens.body;
    HttpResult r = post(s.port, "/v1/chat/completions",
                        {{"model", "test-model"}, {"messages", hello()}, {"max_tokens", 6}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    json body = r.json();
    EXPECT_EQ(body["object"], "chat.completion");
    EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(body["choices"][0]["message"]["content"].is_string());
    EXPECT_EQ(body["usage"]["prompt_tokens"], tokens.json()["count"]);
    EXPECT_LE(body["usage"]["completion_tokens"].get<int>(), 6);
}

TEST(ServerChat, TextPartsRenderLikeStringContent) {
    TestServer s(kDemo);
    json parts = json::array({{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me a story."}}}}}});
    HttpResult a = post(s.port, "/tokenize", {{"messages", parts}});
    HttpResult b = post(s.port, "/tokenize", {{"messages", hello()}});
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.json()["tokens"], b.json()["tokens"]);
}

TEST(ServerChat, StreamStartsWithRoleAndMatchesNonStreamedText) {
    TestServer s(kDemo);
    json request = {{"messages", hello()}, {"max_tokens", 8}, {"temperature", 0}};
    HttpResult whole = post(s.port, "/v1/chat/completions", request);
    request["stream"] = true;
    request["stream_options"] = {{"include_usage", true}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    bool done = false;
    auto events = sse_events(r.body, &done);
    ASSERT_TRUE(done);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events[0]["object"], "chat.completion.chunk");
    EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
    std::string text;
    for (size_t i = 1; i + 1 < events.size(); ++i) text += events[i]["choices"][0]["delta"].value("content", "");
    EXPECT_EQ(text, whole.json()["choices"][0]["message"]["content"]);
    EXPECT_EQ(events.back()["usage"], whole.json()["usage"]);
}

TEST(ServerChat, LogprobsListTopAlternativesWithBytes) {
    TestServer s(kDemo);
    HttpResult r =
        post(s.port, "/v1/chat/completions",
             {{"messages", hello()}, {"max_tokens", 3}, {"logprobs", true}, {"top_logprobs", 2}, {"ignore_eos", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json content = r.json()["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 3u);
    for (const json& entry : content) {
        EXPECT_EQ(entry["top_logprobs"].size(), 2u);
        EXPECT_TRUE(entry["bytes"].is_array());
        EXPECT_LE(entry["logprob"].get<double>(), 0.0);
    }
}

TEST(ServerChat, StopStringEndsTheTextBeforeIt) {
    TestServer s(kDemo);
    json request = {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}};
    HttpResult full = post(s.port, "/v1/completions", request);
    ASSERT_EQ(full.status, 200) << full.body;
    const std::string text = full.json()["choices"][0]["text"];
    ASSERT_GE(text.size(), 8u);
    const std::string stop = text.substr(text.size() / 2, 2);
    request["stop"] = {stop};
    HttpResult stopped = post(s.port, "/v1/completions", request);
    ASSERT_EQ(stopped.status, 200) << stopped.body;
    const json choice = stopped.json()["choices"][0];
    EXPECT_EQ(choice["text"], text.substr(0, text.find(stop)));
    EXPECT_EQ(choice["finish_reason"], "stop");
    EXPECT_EQ(choice["stop_reason"], stop);
}

TEST(ServerChat, EchoPrependsThePromptToTheCompletion) {
    TestServer s(kDemo);
    json request = {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}};
    HttpResult plain = post(s.port, "/v1/completions", request);
    request["echo"] = true;
    HttpResult echoed = post(s.port, "/v1/completions", request);
    ASSERT_EQ(echoed.status, 200) << echoed.body;
    EXPECT_EQ(echoed.json()["choices"][0]["text"],
              "Once upon a time" + plain.json()["choices"][0]["text"].get<std::string>());
}

TEST(ServerChat, DetokenizeInvertsTokenize) {
    TestServer s(kDemo);
    HttpResult tokens = post(s.port, "/tokenize", {{"prompt", "Hello there, friend."}});
    ASSERT_EQ(tokens.status, 200) << tokens.body;
    EXPECT_EQ(tokens.json()["count"], tokens.json()["tokens"].size());
    HttpResult text = post(s.port, "/detokenize", {{"tokens", tokens.json()["tokens"]}});
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(text.json()["prompt"], "Hello there, friend.");
}

}  // namespace
}  // namespace taco::server::testing
