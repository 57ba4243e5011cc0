// /v1/completions with echo and logprobs (prompt logprobs, as lm-eval-harness asks for them with max_tokens 0),
// and vLLM's prompt_logprobs parameter.
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kLlama = "tests/data/models/llama";

// The engine's own prompt logprobs for `prompt`, to compare the server's numbers with.
std::vector<SampleLogprobs> engine_prompt_logprobs(Engine& engine, GenerationInput input) {
    input.params.max_tokens = 0;
    input.params.prompt_logprobs = 2;
    std::vector<GenerationInput> inputs;
    inputs.push_back(std::move(input));
    auto outputs = engine.generate(std::move(inputs));
    EXPECT_TRUE(outputs.at(0).is_ok()) << outputs.at(0).status().message();
    return outputs.at(0).is_ok() ? outputs.at(0)->prompt_logprobs : std::vector<SampleLogprobs>{};
}

void expect_echo_logprobs_shape(const json& lp, size_t num_tokens) {
    ASSERT_EQ(lp["tokens"].size(), num_tokens) << lp.dump();
    ASSERT_EQ(lp["token_logprobs"].size(), num_tokens);
    ASSERT_EQ(lp["top_logprobs"].size(), num_tokens);
    ASSERT_EQ(lp["text_offset"].size(), num_tokens);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());  // the first prompt token has no context
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    int64_t offset = 0;
    for (size_t i = 0; i < num_tokens; ++i) {
        EXPECT_EQ(lp["text_offset"][i], offset) << i;
        offset += int64_t(lp["tokens"][i].get<std::string>().size());
        if (i == 0) continue;
        EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0) << i;
        EXPECT_GE(lp["top_logprobs"][i].size(), 1u) << i;
        EXPECT_LE(lp["top_logprobs"][i].size(), 3u) << i;  // the token itself and the 2 most likely
    }
}

TEST(ServerEchoLogprobs, PromptOnlyScoringReturnsThePromptWithItsLogprobs) {
    TestServer s("models/demo");
    const std::string prompt = "Once upon a time there was a";
    HttpResult r =
        post(s.port, "/v1/completions", {{"prompt", prompt}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    ASSERT_EQ(body["choices"].size(), 1u);
    const json& choice = body["choices"][0];
    EXPECT_EQ(choice["text"], prompt);
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_FALSE(choice.contains("prompt_logprobs"));  // only when vLLM's parameter is used
    EXPECT_EQ(body["usage"]["completion_tokens"], 0);
    const size_t num_prompt = body["usage"]["prompt_tokens"].get<size_t>();
    const json& lp = choice["logprobs"];
    expect_echo_logprobs_shape(lp, num_prompt);
    std::string joined;
    for (const json& t : lp["tokens"]) joined += t.get<std::string>();
    EXPECT_EQ(joined, prompt);

    GenerationInput input;
    input.prompt = prompt;
    const auto want = engine_prompt_logprobs(*s.engine, input);
    ASSERT_EQ(want.size() + 1, num_prompt);
    for (size_t i = 1; i < num_prompt; ++i) {
        EXPECT_EQ(lp["token_logprobs"][i].get<double>(), double(want[i - 1].sampled.logprob)) << i;
        EXPECT_EQ(lp["top_logprobs"][i][lp["tokens"][i].get<std::string>()].get<double>(),
                  double(want[i - 1].sampled.logprob));
    }
}

TEST(ServerEchoLogprobs, EchoWithGeneratedTokensPutsThePromptFirst) {
    TestServer s(kLlama);
    const std::vector<int32_t> prompt = {1, 17, 42, 99, 7};
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", prompt},
                         {"echo", true},
                         {"logprobs", 1},
                         {"max_tokens", 3},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"return_token_ids", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    const json& choice = body["choices"][0];
    const json& lp = choice["logprobs"];
    expect_echo_logprobs_shape(lp, prompt.size() + 3);
    for (size_t i = 0; i < prompt.size(); ++i) EXPECT_EQ(lp["tokens"][i], fmt::format("token_id:{}", prompt[i]));
    for (size_t i = 0; i < 3; ++i)
        EXPECT_EQ(lp["tokens"][prompt.size() + i], fmt::format("token_id:{}", choice["token_ids"][i].get<int>()));
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(body["usage"]["completion_tokens"], 3);
}

TEST(ServerEchoLogprobs, StreamedEchoSendsThePromptAndItsLogprobsInTheFirstChunk) {
    TestServer s("models/demo");
    const std::string prompt = "The little cat";
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", prompt}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}, {"stream", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    bool done = false;
    auto events = sse_events(r.body, &done);
    EXPECT_TRUE(done);
    ASSERT_EQ(events.size(), 1u) << r.body;
    const json& choice = events[0]["choices"][0];
    EXPECT_EQ(choice["text"], prompt);
    EXPECT_EQ(choice["finish_reason"], "length");
    const json& lp = choice["logprobs"];
    ASSERT_GE(lp["tokens"].size(), 2u);
    expect_echo_logprobs_shape(lp, lp["tokens"].size());
    for (size_t i = 1; i < lp["top_logprobs"].size(); ++i) EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
}

TEST(ServerEchoLogprobs, VllmPromptLogprobsListsEachPositionWithRanks) {
    TestServer s(kLlama);
    const std::vector<int32_t> prompt = {1, 17, 42, 99};
    HttpResult r = post(s.port, "/v1/completions", {{"prompt", prompt}, {"prompt_logprobs", 2}, {"max_tokens", 1}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    const json& choice = body["choices"][0];
    EXPECT_TRUE(choice["logprobs"].is_null());
    const json& plp = choice["prompt_logprobs"];
    ASSERT_EQ(plp.size(), prompt.size()) << plp.dump();
    EXPECT_TRUE(plp[0].is_null());
    GenerationInput input;
    input.prompt_ids = prompt;
    const auto want = engine_prompt_logprobs(*s.engine, input);
    for (size_t i = 1; i < prompt.size(); ++i) {
        const json& entry = plp[i];
        ASSERT_TRUE(entry.is_object());
        EXPECT_GE(entry.size(), 2u);
        EXPECT_LE(entry.size(), 3u);
        const json& own = entry[std::to_string(prompt[i])];
        EXPECT_EQ(own["logprob"].get<double>(), double(want[i - 1].sampled.logprob));
        EXPECT_EQ(own["rank"], want[i - 1].sampled_rank);
        EXPECT_EQ(own["decoded_token"], fmt::format("token_id:{}", prompt[i]));
        for (const auto& [id, value] : entry.items()) EXPECT_GE(value["rank"].get<int64_t>(), 1) << id;
    }
}

TEST(ServerEchoLogprobs, ChatResponseCarriesPromptLogprobsAtTheTopLevel) {
    TestServer s("models/demo");
    const json messages = json::array({{{"role", "user"}, {"content", "Hello"}}});
    HttpResult r =
        post(s.port, "/v1/chat/completions", {{"messages", messages}, {"prompt_logprobs", 1}, {"max_tokens", 2}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    const json& plp = body["prompt_logprobs"];
    ASSERT_EQ(plp.size(), body["usage"]["prompt_tokens"].get<size_t>()) << r.body;
    EXPECT_TRUE(plp[0].is_null());
    for (size_t i = 1; i < plp.size(); ++i) {
        ASSERT_TRUE(plp[i].is_object());
        EXPECT_GE(plp[i].size(), 1u);
        EXPECT_LE(plp[i].size(), 2u);
    }
}

TEST(ServerEchoLogprobs, ParametersThatCannotGoTogetherAreRejected) {
    TestServer s("models/demo");
    auto expect_400 = [&](const std::string& path, const json& body, const std::string& param) {
        HttpResult r = post(s.port, path, body);
        EXPECT_EQ(r.status, 400) << r.body;
        EXPECT_EQ(r.json()["error"]["param"], param) << r.body;
    };
    expect_400("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 0}}, "max_tokens");
    expect_400("/v1/completions", {{"prompt", "hi"}, {"prompt_logprobs", 1}, {"stream", true}}, "prompt_logprobs");
    expect_400("/v1/completions", {{"prompt", "hi"}, {"echo", true}, {"logprobs", 30}, {"max_tokens", 0}}, "logprobs");
    const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
    // Chat's echo is honoured (VllmFields.EchoOnChatPrependsTheLastAssistantMessage); a non-boolean is refused.
    expect_400("/v1/chat/completions", {{"messages", messages}, {"echo", "yes"}}, "echo");
    expect_400("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 0}}, "max_tokens");
    // echo without logprobs and max_tokens 0 is the prompt alone.
    HttpResult r = post(s.port, "/v1/completions", {{"prompt", "hi there"}, {"echo", true}, {"max_tokens", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["text"], "hi there");
    EXPECT_TRUE(r.json()["choices"][0]["logprobs"].is_null());
}

}  // namespace
}  // namespace taco::server::testing
