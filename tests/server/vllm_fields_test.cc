// vLLM's request fields: each is honoured (the test shows its effect) or refused with a 400 naming it, never
// accepted and ignored. Token-id prompts on the test llama (no tokenizer), text and chat on the demo model.
#include <gtest/gtest.h>

#include <set>

#include "server/vllm_fields.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kLlama = "tests/data/models/llama";
const char* kDemo = "models/demo";

void expect_400(const HttpResult& r, const std::string& param) {
    EXPECT_EQ(r.status, 400) << r.body;
    if (r.status != 400) return;
    EXPECT_EQ(r.json()["error"]["param"], param) << r.body;
}

json story() { return json::array({{{"role", "user"}, {"content", "Tell me a story."}}}); }

TEST(VllmFields, LogitsProcessorsAreRefusedNamingTheFieldUnlessNeutral) {
    const auto found = unimplemented_vllm_field(json{{"prompt", "hi"}, {"logits_processors", {"x.y"}}});
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->field, "logits_processors");
    EXPECT_NE(found->message.find("'logits_processors' is not supported"), std::string::npos) << found->message;
    EXPECT_FALSE(unimplemented_vllm_field({{"logits_processors", json::array()}}).has_value());
    // Beam search is served (beam_search_test.cc), so these are no longer refused here.
    EXPECT_FALSE(unimplemented_vllm_field({{"use_beam_search", true}, {"length_penalty", 0.5}}).has_value());

    TestServer s(kLlama);
    const json base = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}};
    json processors = base;
    processors["logits_processors"] = {"my.module:Processor"};
    expect_400(post(s.port, "/v1/completions", processors), "logits_processors");
    json plain = base;
    plain["use_beam_search"] = false;
    plain["logits_processors"] = json::array();
    EXPECT_EQ(post(s.port, "/v1/completions", plain).status, 200);
}

TEST(VllmFields, AllowedTokenIdsConfineEverySampledToken) {
    TestServer s(kLlama);
    json request = {{"prompt", {1, 2, 3}}, {"max_tokens", 12},         {"temperature", 1.5},
                    {"seed", 7},           {"return_token_ids", true}, {"allowed_token_ids", {5, 77, 300}}};
    HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const std::vector<int32_t> ids = r.json()["choices"][0]["token_ids"];
    ASSERT_EQ(ids.size(), 12u);
    std::set<int32_t> distinct(ids.begin(), ids.end());
    for (int32_t id : ids) EXPECT_TRUE(id == 5 || id == 77 || id == 300) << id;
    EXPECT_GT(distinct.size(), 1u);  // sampled among them, not stuck on one
    // Greedy: the most likely allowed token, whatever the model prefers overall.
    request["temperature"] = 0;
    request["allowed_token_ids"] = {42};
    r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["token_ids"], json(std::vector<int>(12, 42)));
    request["allowed_token_ids"] = json::array();
    expect_400(post(s.port, "/v1/completions", request), "allowed_token_ids");
    request["allowed_token_ids"] = {512};  // the vocabulary is [0, 512)
    expect_400(post(s.port, "/v1/completions", request), "allowed_token_ids");
}

TEST(VllmFields, BadWordsAreNeverGenerated) {
    TestServer s(kDemo);
    json request = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"return_token_ids", true}};
    HttpResult free = post(s.port, "/v1/completions", request);
    ASSERT_EQ(free.status, 200) << free.body;
    const std::vector<int32_t> ids = free.json()["choices"][0]["token_ids"];
    ASSERT_GE(ids.size(), 2u);
    // The greedy continuation's first token, as a word: banned, the output takes another path from the start.
    HttpResult first = post(s.port, "/detokenize", {{"tokens", {ids[0]}}});
    ASSERT_EQ(first.status, 200) << first.body;
    const std::string word = first.json()["prompt"];
    request["bad_words"] = {word};
    HttpResult banned = post(s.port, "/v1/completions", request);
    ASSERT_EQ(banned.status, 200) << banned.body;
    const std::vector<int32_t> other = banned.json()["choices"][0]["token_ids"];
    ASSERT_FALSE(other.empty());
    for (int32_t id : other) EXPECT_NE(id, ids[0]) << "'" << word << "'";
    // A two-token sequence: its second token never follows its first.
    HttpResult pair = post(s.port, "/detokenize", {{"tokens", {ids[0], ids[1]}}});
    // json::array: a braced list of one json value is a copy of it with clang (nlohmann's initializer-list rule).
    request["bad_words"] = json::array({pair.json()["prompt"]});
    HttpResult two = post(s.port, "/v1/completions", request);
    ASSERT_EQ(two.status, 200) << two.body;
    const std::vector<int32_t> out = two.json()["choices"][0]["token_ids"];
    for (size_t i = 0; i + 1 < out.size(); ++i) EXPECT_FALSE(out[i] == ids[0] && out[i + 1] == ids[1]) << i;
    request["bad_words"] = "no";
    expect_400(post(s.port, "/v1/completions", request), "bad_words");
}

TEST(VllmFields, TruncatePromptTokensKeepsTheLastTokens) {
    TestServer s(kLlama);
    json request = {{"prompt", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
                    {"max_tokens", 2},
                    {"temperature", 0},
                    {"return_token_ids", true},
                    {"truncate_prompt_tokens", 3}};
    HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["prompt_token_ids"], json({8, 9, 10}));
    EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 3);
    HttpResult same = post(s.port, "/v1/completions",
                           {{"prompt", {8, 9, 10}}, {"max_tokens", 2}, {"temperature", 0}, {"return_token_ids", true}});
    EXPECT_EQ(r.json()["choices"][0]["token_ids"], same.json()["choices"][0]["token_ids"]);
    request["truncate_prompt_tokens"] = 100000;  // past max_model_len
    expect_400(post(s.port, "/v1/completions", request), "truncate_prompt_tokens");
    request["truncate_prompt_tokens"] = 0;
    expect_400(post(s.port, "/v1/completions", request), "truncate_prompt_tokens");
    request["truncate_prompt_tokens"] = -1;  // the last max_model_len tokens: the whole prompt here
    r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 10);
}

TEST(VllmFields, ContinueFinalMessageLeavesTheLastMessageOpen) {
    TestServer s(kDemo);
    json messages = story();
    messages.push_back({{"role", "assistant"}, {"content", "Once upon a time"}});
    HttpResult open =
        post(s.port, "/tokenize",
             {{"messages", messages}, {"continue_final_message", true}, {"add_generation_prompt", false}});
    ASSERT_EQ(open.status, 200) << open.body;
    HttpResult text = post(s.port, "/detokenize", {{"tokens", open.json()["tokens"]}});
    const std::string prompt = text.json()["prompt"];
    ASSERT_GE(prompt.size(), 16u);
    EXPECT_EQ(prompt.substr(prompt.size() - 16), "Once upon a time") << prompt;
    // continue_final_message alone turns the default generation prompt off.
    HttpResult alone = post(s.port, "/tokenize", {{"messages", messages}, {"continue_final_message", true}});
    EXPECT_EQ(alone.json()["tokens"], open.json()["tokens"]);
    HttpResult closed = post(s.port, "/tokenize", {{"messages", messages}, {"add_generation_prompt", false}});
    EXPECT_GT(closed.json()["count"].get<int>(), open.json()["count"].get<int>());  // <|im_end|> after it
    expect_400(post(s.port, "/v1/chat/completions",
                    {{"messages", messages}, {"continue_final_message", true}, {"add_generation_prompt", true}}),
               "continue_final_message");
}

TEST(VllmFields, EchoOnChatPrependsTheLastAssistantMessage) {
    TestServer s(kDemo);
    json messages = story();
    messages.push_back({{"role", "assistant"}, {"content", "Once upon a time"}});
    json request = {{"messages", messages},
                    {"continue_final_message", true},
                    {"max_tokens", 5},
                    {"temperature", 0},
                    {"echo", true}};
    HttpResult echoed = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(echoed.status, 200) << echoed.body;
    request["echo"] = false;
    HttpResult plain = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(plain.status, 200) << plain.body;
    const std::string reply = plain.json()["choices"][0]["message"]["content"];
    EXPECT_EQ(echoed.json()["choices"][0]["message"]["content"], "Once upon a time" + reply);
    // Streamed: the echo is the delta after the role.
    request["echo"] = true;
    request["stream"] = true;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    bool done = false;
    auto events = sse_events(streamed.body, &done);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events[1]["choices"][0]["delta"]["content"], "Once upon a time");
    // A last message from the user is not echoed (its role is not the reply's).
    HttpResult user = post(s.port, "/v1/chat/completions",
                           {{"messages", story()}, {"max_tokens", 3}, {"temperature", 0}, {"echo", true}});
    HttpResult user_plain =
        post(s.port, "/v1/chat/completions", {{"messages", story()}, {"max_tokens", 3}, {"temperature", 0}});
    EXPECT_EQ(user.json()["choices"][0]["message"]["content"], user_plain.json()["choices"][0]["message"]["content"]);
}

TEST(VllmFields, ReturnTokensAsTokenIdsNamesLogprobTokensByTheirIds) {
    TestServer s(kDemo);
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", "Once upon a time"},
                         {"max_tokens", 3},
                         {"temperature", 0},
                         {"logprobs", 2},
                         {"return_token_ids", true},
                         {"return_tokens_as_token_ids", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = r.json()["choices"][0];
    for (size_t i = 0; i < choice["token_ids"].size(); ++i) {
        EXPECT_EQ(choice["logprobs"]["tokens"][i], "token_id:" + std::to_string(choice["token_ids"][i].get<int>()));
        for (const auto& [token, logprob] : choice["logprobs"]["top_logprobs"][i].items())
            EXPECT_EQ(token.rfind("token_id:", 0), 0u) << token;
    }
    HttpResult chat = post(s.port, "/v1/chat/completions",
                           {{"messages", story()},
                            {"max_tokens", 3},
                            {"temperature", 0},
                            {"logprobs", true},
                            {"top_logprobs", 2},
                            {"return_tokens_as_token_ids", true}});
    ASSERT_EQ(chat.status, 200) << chat.body;
    // Held here: a range-for over chat.json()[...] would read the parsed body after its temporary is destroyed.
    const json body = chat.json();
    for (const json& entry : body.at("choices").at(0).at("logprobs").at("content")) {
        EXPECT_EQ(entry["token"].get<std::string>().rfind("token_id:", 0), 0u) << entry;
        for (const json& top : entry["top_logprobs"])
            EXPECT_EQ(top["token"].get<std::string>().rfind("token_id:", 0), 0u);
    }
}

TEST(VllmFields, RequestChatTemplateNeedsTheTrustFlag) {
    const json request = {{"messages", story()},
                          {"chat_template", "{% for m in messages %}[{{ m.content }}]{% endfor %}"}};
    {
        TestServer s(kDemo);
        expect_400(post(s.port, "/tokenize", request), "chat_template");
        expect_400(post(s.port, "/v1/chat/completions", request), "chat_template");
        json kwargs = {{"messages", story()}, {"chat_template_kwargs", {{"chat_template", "x"}}}};
        expect_400(post(s.port, "/v1/chat/completions", kwargs), "chat_template_kwargs");
    }
    ApiServerOptions options;
    options.trust_request_chat_template = true;
    TestServer s(kDemo, options);
    HttpResult own = post(s.port, "/tokenize", request);
    ASSERT_EQ(own.status, 200) << own.body;
    HttpResult text = post(s.port, "/tokenize", {{"prompt", "[Tell me a story.]"}, {"add_special_tokens", false}});
    EXPECT_EQ(own.json()["tokens"], text.json()["tokens"]);
    json broken = request;
    broken["chat_template"] = "{% for %}";
    expect_400(post(s.port, "/v1/chat/completions", broken), "chat_template");
}

TEST(VllmFields, ReasoningEffortIsValidatedAndReachesTheTemplate) {
    ApiServerOptions options;
    options.trust_request_chat_template = true;
    TestServer s(kDemo, options);
    HttpResult low =
        post(s.port, "/tokenize",
             {{"messages", story()}, {"reasoning_effort", "low"}, {"chat_template", "<{{ reasoning_effort }}>"}});
    ASSERT_EQ(low.status, 200) << low.body;
    HttpResult text = post(s.port, "/tokenize", {{"prompt", "<low>"}, {"add_special_tokens", false}});
    EXPECT_EQ(low.json()["tokens"], text.json()["tokens"]);
    expect_400(post(s.port, "/v1/chat/completions", {{"messages", story()}, {"reasoning_effort", "extreme"}}),
               "reasoning_effort");
    HttpResult ok =
        post(s.port, "/v1/chat/completions", {{"messages", story()}, {"reasoning_effort", "high"}, {"max_tokens", 2}});
    EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(VllmFields, PriorityNeedsThePriorityPolicy) {
    const json request = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}, {"priority", 3}};
    {
        TestServer s(kLlama);
        expect_400(post(s.port, "/v1/completions", request), "priority");
        json zero = request;
        zero["priority"] = 0;
        EXPECT_EQ(post(s.port, "/v1/completions", zero).status, 200);
    }
    TestServer s(kLlama, {}, [](EngineConfig& c) { c.scheduling_policy = SchedulingPolicy::kPriority; });
    EXPECT_EQ(post(s.port, "/v1/completions", request).status, 200);
    json chat_like = request;
    chat_like["priority"] = "high";
    expect_400(post(s.port, "/v1/completions", chat_like), "priority");
}

TEST(VllmFields, LogprobsFalseWithZeroTopLogprobsIsAccepted) {
    TestServer s(kDemo);
    HttpResult r = post(s.port, "/v1/chat/completions",
                        {{"messages", story()}, {"max_tokens", 2}, {"logprobs", false}, {"top_logprobs", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.json()["choices"][0]["logprobs"].is_null());
    expect_400(post(s.port, "/v1/chat/completions",
                    {{"messages", story()}, {"max_tokens", 2}, {"logprobs", false}, {"top_logprobs", 2}}),
               "top_logprobs");
}

TEST(VllmFields, StopReasonIsTheStopTokenIdAsAnInteger) {
    TestServer s(kLlama);
    json request = {{"prompt", {1, 2, 3}}, {"max_tokens", 6}, {"temperature", 0}, {"return_token_ids", true}};
    HttpResult free = post(s.port, "/v1/completions", request);
    ASSERT_EQ(free.status, 200) << free.body;
    const int second = free.json()["choices"][0]["token_ids"][1];
    request["stop_token_ids"] = {second};
    HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(r.json()["choices"][0]["stop_reason"], json(second));  // a number, not "123"
    request["stream"] = true;
    bool done = false;
    auto events = sse_events(post(s.port, "/v1/completions", request).body, &done);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["choices"][0]["stop_reason"], json(second));
    EXPECT_TRUE(free.json()["choices"][0]["stop_reason"].is_null());  // length
}

TEST(VllmFields, EveryReplyCarriesTheSameSystemFingerprint) {
    TestServer s(kDemo);
    HttpResult completion = post(s.port, "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}});
    HttpResult chat = post(s.port, "/v1/chat/completions", {{"messages", story()}, {"max_tokens", 2}});
    bool done = false;
    auto events = sse_events(
        post(s.port, "/v1/chat/completions", {{"messages", story()}, {"max_tokens", 2}, {"stream", true}}).body, &done);
    const json fingerprint = completion.json()["system_fingerprint"];
    ASSERT_TRUE(fingerprint.is_string()) << completion.body;
    EXPECT_EQ(fingerprint.get<std::string>().rfind("fp_", 0), 0u);
    EXPECT_EQ(chat.json()["system_fingerprint"], fingerprint);
    ASSERT_FALSE(events.empty());
    for (const json& e : events) EXPECT_EQ(e["system_fingerprint"], fingerprint);
}

}  // namespace
}  // namespace taco::server::testing
