// Auth, malformed requests, limits and client disconnects: each gets a clear 4xx/5xx and the server keeps
// serving the other clients.
#include <chrono>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

void expect_error(const HttpResult& r, int status, const std::string& needle, const std::string& param = "") {
    EXPECT_EQ(r.status, status) << r.body;
    json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body;
    const json& e = body["error"];
    EXPECT_NE(e["message"].get<std::string>().find(needle), std::string::npos) << r.body;
    EXPECT_TRUE(e.contains("type") && e.contains("param") && e.contains("code")) << r.body;
    if (!param.empty()) {
        EXPECT_EQ(e["param"], param) << r.body;
    }
}

// As vLLM: the key guards /v1/... only, and the scheme "Bearer" is matched in any case.
TEST(ServerErrors, ApiKeyGuardsTheOpenAiRoutes) {
    ApiServerOptions options;
    options.api_keys = {"sekret", "other key"};
    TestServer s("tests/data/models/llama", options);
    EXPECT_EQ(http_call(s.port, "GET", "/v1/models", "", "other key").status, 200);  // any of the keys
    expect_error(http_call(s.port, "GET", "/v1/models", ""), 401, "Authorization");
    expect_error(http_call(s.port, "GET", "/v1/models", "", "wrong"), 401, "Authorization");
    expect_error(http_call(s.port, "GET", "/v1/models/test-model", ""), 401, "Authorization");
    expect_error(post(s.port, "/v1/completions", {{"prompt", {1, 2}}}, "sekre"), 401, "Authorization");
    EXPECT_EQ(http_call(s.port, "GET", "/v1/models", "", "sekret").status, 200);
    EXPECT_EQ(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 1}}, "sekret").status, 200);
    for (const char* scheme : {"bearer", "BEARER", "Bearer"}) {
        const std::string request = fmt::format(
            "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: {} sekret\r\nConnection: close\r\n\r\n", scheme);
        EXPECT_EQ(first_status(raw_exchange(s.port, request)), 200) << scheme;
    }
    const std::string basic =
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Basic sekret\r\nConnection: close\r\n\r\n";
    EXPECT_EQ(first_status(raw_exchange(s.port, basic)), 401);
    EXPECT_EQ(http_call(s.port, "GET", "/health", "").status, 200);
    EXPECT_EQ(http_call(s.port, "GET", "/metrics", "").status, 200);
    EXPECT_EQ(http_call(s.port, "GET", "/ping", "").status, 200);
    EXPECT_EQ(http_call(s.port, "GET", "/load", "").status, 200);
    EXPECT_EQ(post(s.port, "/tokenize", {{"prompt", "hi"}}).status, 400);  // not 401: this model has no tokenizer
}

// vLLM's small routes: /ping and /invocations (SageMaker), /load (requests in flight) and /v1/models/{id} (the
// OpenAI client's models.retrieve, the id percent-decoded), with 404 for a name the server does not serve.
TEST(ServerErrors, PingInvocationsLoadAndOneModelAnswerAsVllm) {
    ApiServerOptions options;
    options.served_model_names = {"org/name", "alias"};
    TestServer s("tests/data/models/llama", options);
    const HttpResult ping = http_call(s.port, "GET", "/ping", "");
    EXPECT_EQ(ping.status, 200);
    EXPECT_TRUE(ping.body.empty()) << ping.body;
    EXPECT_EQ(http_call(s.port, "POST", "/ping", "").status, 200);
    EXPECT_EQ(http_call(s.port, "DELETE", "/ping", "").status, 405);
    const HttpResult load = http_call(s.port, "GET", "/load", "");
    ASSERT_EQ(load.status, 200);
    EXPECT_EQ(json::parse(load.body), json({{"server_load", 0}}));
    EXPECT_EQ(http_call(s.port, "POST", "/load", "{}").status, 405);
    for (const char* path : {"/v1/models/org%2Fname", "/v1/models/org/name", "/v1/models/alias"}) {
        const HttpResult r = http_call(s.port, "GET", path, "");
        ASSERT_EQ(r.status, 200) << path << ": " << r.body;
        const json card = json::parse(r.body);
        EXPECT_EQ(card["object"], "model") << path;
        EXPECT_EQ(card["id"], std::string(path).find("alias") != std::string::npos ? "alias" : "org/name") << path;
    }
    // /invocations: chat for "messages", a completion for "prompt" (the same replies as /v1/...), else a 400.
    const HttpResult completion = post(s.port, "/invocations", {{"prompt", {1, 2}}, {"max_tokens", 2}});
    ASSERT_EQ(completion.status, 200) << completion.body;
    EXPECT_EQ(json::parse(completion.body)["object"], "text_completion");
    expect_error(post(s.port, "/invocations", {{"max_tokens", 2}}), 400, "\"messages\"");
    expect_error(post(s.port, "/invocations", {{"prompt", {1, 2}}, {"max_tokens", -1}}), 400, "max_tokens");
    EXPECT_EQ(http_call(s.port, "GET", "/invocations", "").status, 405);
    expect_error(http_call(s.port, "GET", "/v1/models/gpt-4", ""), 404, "gpt-4", "model");
    expect_error(http_call(s.port, "GET", "/v1/models/%zz", ""), 404, "%zz", "model");
}

TEST(ServerErrors, BadRequestsGetClearErrorsWhileAnotherClientStreams) {
    TestServer s("models/demo");
    HttpResult streamed;
    std::thread streamer([&] {
        streamed = post(s.port, "/v1/completions",
                        {{"prompt", "Once upon a time"},
                         {"max_tokens", 40},
                         {"ignore_eos", true},
                         {"stream", true},
                         {"return_token_ids", true}});
    });
    const int port = s.port;
    expect_error(http_call(port, "POST", "/v1/completions", "{\"prompt\": "), 400, "invalid JSON");
    expect_error(http_call(port, "POST", "/v1/completions", "{\"prompt\": \"\xff\xfe\", \"max_tokens\": 2}"), 400,
                 "invalid JSON");
    expect_error(post(port, "/v1/completions", {{"prompt", "hi"}, {"temperature", "hot"}}), 400, "temperature",
                 "temperature");
    expect_error(post(port, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", -3}}), 400, "max_tokens",
                 "max_tokens");
    expect_error(post(port, "/v1/completions", {{"prompt", 5}}), 400, "'prompt'", "prompt");
    expect_error(post(port, "/v1/completions", {{"prompt", "hi"}, {"model", "gpt-4"}}), 404, "gpt-4", "model");
    expect_error(post(port, "/v1/completions", {{"prompt", "hi"}, {"suffix", "x"}}), 400, "suffix", "suffix");
    expect_error(post(port, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 5000}}), 400, "max");
    expect_error(post(port, "/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", {{{"type", "function"}}}}}),
                 400, "tools", "tools");
    expect_error(post(port, "/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", {{"type", "xml"}}}}),
                 400, "'xml' is not supported", "response_format");
    expect_error(post(port, "/v1/chat/completions", {{"messages", "hello"}}), 400, "messages", "messages");
    expect_error(http_call(port, "GET", "/v2/nothing", ""), 404, "/v2/nothing");
    expect_error(http_call(port, "POST", "/v1/completions", std::string(33u << 20, 'a')), 413, "limit");
    streamer.join();
    ASSERT_EQ(streamed.status, 200);
    bool done = false;
    auto events = sse_events(streamed.body, &done);
    EXPECT_TRUE(done);
    size_t tokens = 0;
    for (const json& e : events)
        for (const json& c : e["choices"]) tokens += c["token_ids"].size();
    EXPECT_EQ(tokens, 40u);
}

TEST(ServerErrors, FullServerAnswers503WithRetryAfter) {
    ApiServerOptions options;
    options.max_pending_requests = 0;
    TestServer s("tests/data/models/llama", options);
    HttpResult r = post(s.port, "/v1/completions", {{"prompt", {1, 2}}});
    expect_error(r, 503, "limit");
    EXPECT_EQ(r.retry_after, "1");
}

// A request whose own work throws on the engine's step thread gets a 500 (a streamed one an error event); the
// server and the engine go on serving (engine/engine_faults_test.cc covers the engine's side).
TEST(ServerErrors, ARequestThatFailsOnTheStepThreadIsA500AndTheServerGoesOn) {
    TestServer s("tests/data/models/llama");
    s.engine->set_fault_hook_for_testing([](Engine::FaultPoint point, RequestId) {
        if (point == Engine::FaultPoint::kToken) throw std::runtime_error("injected failure");
    });
    expect_error(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 4}}), 500,
                 "internal error: injected failure");
    const HttpResult streamed =
        post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 4}, {"stream", true}});
    EXPECT_EQ(streamed.status, 200);
    EXPECT_NE(streamed.body.find("internal error: injected failure"), std::string::npos) << streamed.body;
    s.engine->set_fault_hook_for_testing(nullptr);
    EXPECT_EQ(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 4}}).status, 200);
}

TEST(ServerErrors, ClientDisconnectMidStreamAbortsAndFreesKv) {
    TestServer s("models/demo");
    {
        HttpConnection connection(s.port);
        connection.send(
            "POST", "/v1/completions",
            json({{"prompt", "Once upon a time"}, {"max_tokens", 900}, {"ignore_eos", true}, {"stream", true}}).dump());
        std::string received;
        while (received.find("\"text\"") == std::string::npos) {  // the first token arrived
            ASSERT_EQ(connection.read_some(&received), HttpConnection::ReadEnd::kData) << received;
        }
        EXPECT_GT(s.engine->stats().kv_cache_usage, 0.0);
    }  // the socket closes here
    // Wait (bounded) for the server to notice, abort the request and free its blocks.
    for (int i = 0; i < 400 && (s.engine->stats().kv_cache_usage > 0 || s.server->num_in_flight() > 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(s.engine->stats().kv_cache_usage, 0.0);
    EXPECT_EQ(s.server->num_in_flight(), 0);
    HttpResult metrics = http_call(s.port, "GET", "/metrics", "");
    EXPECT_NE(metrics.body.find("vllm:request_success_total{model_name=\"test-model\",finished_reason=\"length\"} 0"),
              std::string::npos);
}

}  // namespace
}  // namespace taco::server::testing
