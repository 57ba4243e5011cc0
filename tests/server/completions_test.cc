// /v1/completions on the golden llama (no tokenizer: token-id prompts), against the engine run directly.
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kLlama = "tests/data/models/llama";

std::vector<int32_t> engine_greedy(Engine& engine, std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationInput input;
    input.prompt_ids = std::move(prompt);
    input.params.temperature = 0;
    input.params.max_tokens = max_tokens;
    input.params.ignore_eos = true;
    std::vector<GenerationInput> inputs;
    inputs.push_back(std::move(input));
    auto outputs = engine.generate(std::move(inputs));
    return outputs.at(0)->samples.at(0).token_ids;
}

TEST(ServerCompletions, TokenIdPromptMatchesEngineAndReportsUsage) {
    TestServer s(kLlama);
    const std::vector<int32_t> expected = engine_greedy(*s.engine, {1, 17, 42, 99}, 6);
    HttpResult r = post(s.port, "/v1/completions",
                        {{"model", "test-model"},
                         {"prompt", {1, 17, 42, 99}},
                         {"max_tokens", 6},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"return_token_ids", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    json body = r.json();
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["model"], "test-model");
    ASSERT_EQ(body["choices"].size(), 1u);
    EXPECT_EQ(body["choices"][0]["token_ids"].get<std::vector<int32_t>>(), expected);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
    EXPECT_EQ(body["usage"]["completion_tokens"], 6);
    EXPECT_EQ(body["usage"]["total_tokens"], 10);
}

TEST(ServerCompletions, StreamCarriesTheSameTokensThenUsageThenDone) {
    TestServer s(kLlama);
    const std::vector<int32_t> expected = engine_greedy(*s.engine, {1, 5, 6}, 5);
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", {1, 5, 6}},
                         {"max_tokens", 5},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}},
                         {"return_token_ids", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "text/event-stream");
    bool done = false;
    auto events = sse_events(r.body, &done);
    EXPECT_TRUE(done);
    ASSERT_GE(events.size(), 2u);
    std::vector<int32_t> streamed;
    for (size_t i = 0; i + 1 < events.size(); ++i)
        for (const json& c : events[i]["choices"])
            for (const json& t : c["token_ids"]) streamed.push_back(t.get<int32_t>());
    EXPECT_EQ(streamed, expected);
    const json& last = events.back();
    EXPECT_TRUE(last["choices"].empty());
    EXPECT_EQ(last["usage"]["completion_tokens"], 5);
    EXPECT_EQ(last["usage"]["prompt_tokens"], 3);
}

TEST(ServerCompletions, SeededSamplesAreReproducibleAndIndexed) {
    TestServer s(kLlama);
    json request = {{"prompt", {1, 8, 9}}, {"max_tokens", 6},    {"temperature", 1.0},      {"n", 3},
                    {"seed", 1234},        {"ignore_eos", true}, {"return_token_ids", true}};
    HttpResult a = post(s.port, "/v1/completions", request);
    HttpResult b = post(s.port, "/v1/completions", request);
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(b.status, 200) << b.body;
    ASSERT_EQ(a.json()["choices"].size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(a.json()["choices"][i]["index"], i);
        EXPECT_EQ(a.json()["choices"][i]["token_ids"], b.json()["choices"][i]["token_ids"]);
    }
    EXPECT_EQ(a.json()["usage"]["completion_tokens"], 18);
}

TEST(ServerCompletions, ListOfTokenIdPromptsGivesOneChoicePerPrompt) {
    TestServer s(kLlama);
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", {{1, 2, 3}, {1, 4}}},
                         {"max_tokens", 2},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"return_token_ids", true}});
    ASSERT_EQ(r.status, 200) << r.body;
    json body = r.json();
    ASSERT_EQ(body["choices"].size(), 2u);
    EXPECT_EQ(body["choices"][0]["prompt_token_ids"], json({1, 2, 3}));
    EXPECT_EQ(body["choices"][1]["prompt_token_ids"], json({1, 4}));
    EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
}

TEST(ServerCompletions, LogprobsHaveOneEntryPerTokenWithTopAlternatives) {
    TestServer s(kLlama);
    HttpResult r =
        post(s.port, "/v1/completions",
             {{"prompt", {1, 3}}, {"max_tokens", 3}, {"temperature", 0}, {"ignore_eos", true}, {"logprobs", 2}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json lp = r.json()["choices"][0]["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 3u);
    ASSERT_EQ(lp["token_logprobs"].size(), 3u);
    ASSERT_EQ(lp["text_offset"].size(), 3u);
    ASSERT_EQ(lp["top_logprobs"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
        EXPECT_GE(lp["top_logprobs"][i].size(), 2u);
        EXPECT_TRUE(lp["tokens"][i].get<std::string>().rfind("token_id:", 0) == 0);  // no tokenizer
    }
}

TEST(ServerCompletions, ModelsVersionHealthAndMetricsRoutes) {
    TestServer s(kLlama);
    HttpResult models = http_call(s.port, "GET", "/v1/models", "");
    ASSERT_EQ(models.status, 200);
    EXPECT_EQ(models.json()["data"][0]["id"], "test-model");
    EXPECT_EQ(models.json()["data"][0]["max_model_len"], s.engine->max_model_len());
    EXPECT_EQ(http_call(s.port, "GET", "/health", "").status, 200);
    EXPECT_TRUE(http_call(s.port, "GET", "/version", "").json().contains("version"));
    ASSERT_EQ(post(s.port, "/v1/completions", {{"prompt", {1, 3}}, {"max_tokens", 2}}).status, 200);
    HttpResult metrics = http_call(s.port, "GET", "/metrics", "");
    ASSERT_EQ(metrics.status, 200);
    for (const char* name :
         {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
          "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_count",
          "vllm:e2e_request_latency_seconds_count", "vllm:time_per_output_token_seconds_bucket"})
        EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
    EXPECT_NE(metrics.body.find("vllm:e2e_request_latency_seconds_count{model_name=\"test-model\"} 1"),
              std::string::npos)
        << metrics.body;
}

// The rest of vLLM's serving metrics, each observed once per finished request (or per step).
TEST(ServerCompletions, MetricsCoverVllmsRequestPhasesTokenCountsAndCacheConfig) {
    TestServer s(kLlama);
    ASSERT_EQ(post(s.port, "/v1/completions", {{"prompt", {1, 3, 5}}, {"max_tokens", 4}, {"ignore_eos", true}}).status,
              200);
    const std::string body = http_call(s.port, "GET", "/metrics", "").body;
    const std::string labels = "{model_name=\"test-model\"}";
    for (const char* name :
         {"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
          "vllm:request_inference_time_seconds", "vllm:request_prompt_tokens", "vllm:request_generation_tokens",
          "vllm:request_params_n", "vllm:request_params_max_tokens"})
        EXPECT_NE(body.find(std::string(name) + "_count" + labels + " 1\n"), std::string::npos) << name << body;
    EXPECT_NE(body.find("vllm:request_prompt_tokens_sum" + labels + " 3\n"), std::string::npos) << body;
    EXPECT_NE(body.find("vllm:request_generation_tokens_sum" + labels + " 4\n"), std::string::npos) << body;
    EXPECT_NE(body.find("vllm:request_params_max_tokens_sum" + labels + " 4\n"), std::string::npos) << body;
    // Four tokens, three gaps between them (the first is the time to first token).
    EXPECT_NE(body.find("vllm:inter_token_latency_seconds_count" + labels + " 3\n"), std::string::npos) << body;
    EXPECT_NE(body.find("vllm:request_success_total{model_name=\"test-model\",finished_reason=\"length\"} 1"),
              std::string::npos);
    // One step computed the prompt (3 tokens), then one token per step.
    const int64_t steps = s.engine->stats().num_steps;
    EXPECT_NE(body.find("vllm:iteration_tokens_total_count" + labels + " " + std::to_string(steps) + "\n"),
              std::string::npos)
        << body;
    EXPECT_NE(body.find("vllm:iteration_tokens_total_bucket{model_name=\"test-model\",le=\"1.0\"} " +
                        std::to_string(steps - 1) + "\n"),
              std::string::npos)
        << body;
    EXPECT_NE(body.find("vllm:cache_config_info{block_size=\"16\""), std::string::npos) << body;
    EXPECT_NE(body.find("num_gpu_blocks=\"256\""), std::string::npos) << body;
}

}  // namespace
}  // namespace taco::server::testing
