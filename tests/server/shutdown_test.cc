// A shutdown with requests still in flight past --shutdown-timeout ends them as vLLM does: a stream's last chunk has
// finish_reason "abort" and [DONE] follows (chat and completions; /v1/responses ends with response.failed), a
// non-streaming request gets a 503, and a new request on a connection still open is refused while the server drains.
#include <chrono>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

// A request that runs far longer than the test: the demo model on the CPU, 900 tokens.
json long_request(const std::string& target, bool stream) {
    json body = {{"max_tokens", 900}, {"ignore_eos", true}, {"stream", stream}};
    if (target == "/v1/completions") body["prompt"] = "Once upon a time";
    if (target == "/v1/chat/completions") body["messages"] = {{{"role", "user"}, {"content", "Tell me a story"}}};
    if (target == "/v1/responses") {
        body.erase("max_tokens");
        body["max_output_tokens"] = 900;
        body["input"] = "Tell me a story";
    }
    return body;
}

// The response of `body` sent to `target`, read whole while the server shuts down (timeout 0.05 s) once the request
// has produced tokens; nullopt when the connection ended before the response was complete. `queued`: the request
// waits behind a long request that holds the server's only sequence (a TestServer with max_num_seqs 1), for
// requests that would otherwise end before the shutdown (/v1/responses has no ignore_eos).
std::optional<HttpResult> response_across_shutdown(TestServer& s, const std::string& target, const json& body,
                                                   bool queued = false) {
    std::optional<HttpResult> result;
    std::optional<HttpConnection> blocker;
    if (queued) {
        blocker.emplace(s.port);
        blocker->send("POST", "/v1/completions", long_request("/v1/completions", false).dump());
    }
    for (int i = 0; queued && i < 1000 && s.engine->stats().generation_tokens_total == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    HttpConnection connection(s.port);
    connection.send("POST", target, body.dump());
    std::thread client([&] {
        try {
            result = connection.receive();
        } catch (const std::exception&) {  // the server closed the connection mid-response
        }
    });
    const int64_t expected_in_flight = queued ? 2 : 1;
    for (int i = 0;
         i < 1000 && (s.engine->stats().generation_tokens_total == 0 || s.server->num_in_flight() < expected_in_flight);
         ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_GT(s.engine->stats().generation_tokens_total, 0);
    EXPECT_EQ(s.server->num_in_flight(), expected_in_flight);
    s.server->shutdown(0.05);
    client.join();
    if (blocker) {
        EXPECT_EQ(blocker->receive().status, 503);
    }
    EXPECT_EQ(s.server->num_in_flight(), 0);
    for (int i = 0; i < 400 && s.engine->stats().kv_cache_usage > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(s.engine->stats().kv_cache_usage, 0.0);
    return result;
}

// The JSON of each "data:" line of a Responses API stream ("event: TYPE" then "data: {...}").
std::vector<json> response_events(const std::string& body) {
    std::vector<json> events;
    for (size_t pos = 0; (pos = body.find("data: ", pos)) != std::string::npos;) {
        const size_t end = body.find('\n', pos);
        events.push_back(json::parse(body.substr(pos + 6, end - pos - 6)));
        pos = end;
    }
    return events;
}

void one_sequence(EngineConfig& config) { config.max_num_seqs = 1; }

// The choices' chunks of a stream cut by the shutdown: the last one of the choice ends it with "abort", then [DONE].
void expect_stream_ends_aborted(const HttpResult& res, bool chat) {
    ASSERT_EQ(res.status, 200);
    bool done = false;
    std::vector<json> events = sse_events(res.body, &done);
    EXPECT_TRUE(done) << "no data: [DONE] at the end:\n"
                      << res.body.substr(res.body.size() - std::min<size_t>(600, res.body.size()));
    ASSERT_FALSE(events.empty());
    const json& last = events.back();
    ASSERT_EQ(last["choices"].size(), 1u) << last.dump();
    EXPECT_EQ(last["choices"][0]["finish_reason"], "abort") << last.dump();
    EXPECT_EQ(last["object"], chat ? "chat.completion.chunk" : "text_completion");
    for (size_t i = 0; i + 1 < events.size(); ++i)
        EXPECT_TRUE(events[i]["choices"][0]["finish_reason"].is_null()) << events[i].dump();
}

TEST(ServerShutdown, CompletionStreamCutByShutdownEndsWithAbortThenDone) {
    TestServer s("models/demo");
    auto res = response_across_shutdown(s, "/v1/completions", long_request("/v1/completions", true));
    ASSERT_TRUE(res) << "the connection was closed before the stream's end";
    expect_stream_ends_aborted(*res, /*chat=*/false);
}

TEST(ServerShutdown, ChatStreamCutByShutdownEndsWithAbortThenUsageAndDone) {
    TestServer s("models/demo");
    json body = long_request("/v1/chat/completions", true);
    body["stream_options"] = {{"include_usage", true}};
    auto res = response_across_shutdown(s, "/v1/chat/completions", body);
    ASSERT_TRUE(res) << "the connection was closed before the stream's end";
    bool done = false;
    std::vector<json> events = sse_events(res->body, &done);
    ASSERT_GE(events.size(), 2u);
    // The usage chunk (no choices) follows the aborted choice's last chunk, as vLLM sends it.
    const json usage = events.back();
    events.pop_back();
    EXPECT_TRUE(usage["choices"].empty()) << usage.dump();
    EXPECT_GT(usage["usage"]["completion_tokens"].get<int64_t>(), 0);
    EXPECT_LT(usage["usage"]["completion_tokens"].get<int64_t>(), 900);
    HttpResult without_usage = *res;
    without_usage.body.clear();
    for (const json& event : events) without_usage.body += "data: " + event.dump() + "\n\n";
    if (done) without_usage.body += "data: [DONE]\n\n";
    expect_stream_ends_aborted(without_usage, /*chat=*/true);
}

TEST(ServerShutdown, NonStreamingRequestsCutByShutdownGetA503) {
    for (const std::string target : {"/v1/completions", "/v1/chat/completions", "/v1/responses"}) {
        SCOPED_TRACE(target);
        const bool queued = target == "/v1/responses";
        TestServer s("models/demo", {}, queued ? one_sequence : nullptr);
        auto res = response_across_shutdown(s, target, long_request(target, false), queued);
        ASSERT_TRUE(res) << "the connection was closed without a response";
        EXPECT_EQ(res->status, 503) << res->body;
        EXPECT_NE(res->json()["error"]["message"].get<std::string>().find("shutting down"), std::string::npos)
            << res->body;
    }
}

TEST(ServerShutdown, ResponsesStreamCutByShutdownEndsWithResponseFailed) {
    TestServer s("models/demo", {}, one_sequence);
    auto res = response_across_shutdown(s, "/v1/responses", long_request("/v1/responses", true), /*queued=*/true);
    ASSERT_TRUE(res) << "the connection was closed before the stream's end";
    ASSERT_EQ(res->status, 200);
    std::vector<json> events = response_events(res->body);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.front()["type"], "response.created");
    const json& last = events.back();
    EXPECT_EQ(last["type"], "response.failed") << last.dump();
    EXPECT_EQ(last["response"]["status"], "failed");
    EXPECT_EQ(last["response"]["error"]["code"], "server_error");
    EXPECT_NE(last["response"]["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
    EXPECT_LT(last["response"]["usage"]["output_tokens"].get<int64_t>(), 900);
}

TEST(ServerShutdown, StreamsThatFinishWithinTheTimeoutAreNotCut) {
    TestServer s("tests/data/models/llama");
    HttpConnection connection(s.port);
    connection.send("POST", "/v1/completions",
                    json({{"prompt", {1, 2, 3}}, {"max_tokens", 8}, {"ignore_eos", true}, {"stream", true}}).dump());
    for (int i = 0; i < 400 && s.server->num_in_flight() == 0 && s.engine->stats().generation_tokens_total == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s.server->shutdown(30);
    HttpResult res = connection.receive();
    bool done = false;
    std::vector<json> events = sse_events(res.body, &done);
    EXPECT_TRUE(done);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "length") << res.body;
}

TEST(ServerShutdown, NewRequestsOnOpenConnectionsAreRefusedWhileDraining) {
    TestServer s("models/demo");
    HttpConnection busy(s.port), idle(s.port);
    busy.send("POST", "/v1/completions", long_request("/v1/completions", true).dump());
    for (int i = 0; i < 1000 && s.engine->stats().generation_tokens_total == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::thread stopper([&] { s.server->shutdown(2); });
    for (int i = 0; i < 100; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the drain has begun
    idle.send("POST", "/v1/completions", json({{"prompt", {1, 2}}, {"max_tokens", 2}}).dump());
    HttpResult refused = idle.receive();
    EXPECT_EQ(refused.status, 503) << refused.body;
    EXPECT_NE(refused.body.find("shutting down"), std::string::npos) << refused.body;
    stopper.join();
}

}  // namespace
}  // namespace taco::server::testing
