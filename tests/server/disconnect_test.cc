// A client that leaves while its non-streaming request is computed aborts the request (its KV blocks freed);
// one that stays gets its reply, and its keep-alive connection keeps serving.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

void send_completion(HttpConnection& connection, const json& body) {
    connection.send("POST", "/v1/completions", body.dump());
}

TEST(ServerDisconnect, NonStreamingClientThatLeavesAbortsItsRequestAndFreesKv) {
    TestServer s("models/demo");
    {
        HttpConnection connection(s.port);
        send_completion(connection, {{"prompt", "Once upon a time"}, {"max_tokens", 900}, {"ignore_eos", true}});
        // Bounded wait until the request holds KV blocks, i.e. it is being computed.
        for (int i = 0; i < 400 && s.engine->stats().kv_cache_usage == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        EXPECT_GT(s.engine->stats().kv_cache_usage, 0.0);
        EXPECT_EQ(s.server->num_in_flight(), 1);
    }  // the socket closes here, long before 900 tokens exist
    for (int i = 0; i < 400 && (s.engine->stats().kv_cache_usage > 0 || s.server->num_in_flight() > 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(s.engine->stats().kv_cache_usage, 0.0);
    EXPECT_EQ(s.server->num_in_flight(), 0);
    EXPECT_LT(s.engine->stats().generation_tokens_total, 900);
    HttpResult metrics = http_call(s.port, "GET", "/metrics", "");
    EXPECT_NE(metrics.body.find("vllm:request_success_total{model_name=\"test-model\",finished_reason=\"length\"} 0"),
              std::string::npos);
}

TEST(ServerDisconnect, KeepAliveConnectionServesNonStreamingRequestsOneAfterAnother) {
    TestServer s("tests/data/models/llama");
    HttpConnection connection(s.port);
    for (int round = 0; round < 3; ++round) {
        send_completion(connection,
                        {{"prompt", {1, 2, 3 + round}}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}});
        HttpResult res = connection.receive();
        ASSERT_EQ(res.status, 200) << res.body;
        EXPECT_EQ(res.json()["usage"]["completion_tokens"], 4);
    }
    // Two requests written back to back (pipelined) are both answered, in order.
    send_completion(connection, {{"prompt", {1, 7}}, {"max_tokens", 2}, {"ignore_eos", true}});
    send_completion(connection, {{"prompt", {1, 8}}, {"max_tokens", 3}, {"ignore_eos", true}});
    for (int expected : {2, 3}) {
        HttpResult res = connection.receive();
        ASSERT_EQ(res.status, 200) << res.body;
        EXPECT_EQ(res.json()["usage"]["completion_tokens"], expected);
    }
    EXPECT_EQ(s.server->num_in_flight(), 0);
}

}  // namespace
}  // namespace taco::server::testing
