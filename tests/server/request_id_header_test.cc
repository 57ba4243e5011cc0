// --enable-request-id-headers: every response carries X-Request-Id, as vLLM's middleware sends it (the client's own
// id when it sent one); without a client id, a generation reply's header is the reply's id.
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

constexpr const char* kModel = "tests/data/models/llama";

std::string completion_body(bool stream) {
    return json{{"prompt", json::array({1, 2})}, {"max_tokens", 2}, {"stream", stream}}.dump();
}

TEST(ServerRequestId, ResponsesCarryTheClientsIdElseTheReplysId) {
    ApiServerOptions options;
    options.enable_request_id_headers = true;
    TestServer s(kModel, options);
    const HttpResult whole = http_call(s.port, "POST", "/v1/completions", completion_body(false));
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(whole.header("x-request-id"), whole.json().at("id").get<std::string>());
    EXPECT_EQ(whole.header("x-request-id").rfind("cmpl-", 0), 0u);

    const HttpResult streamed = http_call(s.port, "POST", "/v1/completions", completion_body(true));
    bool done = false;
    const auto events = sse_events(streamed.body, &done);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(streamed.header("x-request-id"), events[0].at("id").get<std::string>());

    for (bool stream : {false, true}) {
        const HttpResult mine =
            http_call_with(s.port, "POST", "/v1/completions", completion_body(stream), {{"X-Request-Id", "trace-42"}});
        EXPECT_EQ(mine.status, 200);
        EXPECT_EQ(mine.header("x-request-id"), "trace-42") << "stream " << stream;
    }
    // Routes that make no reply id get a random one (32 hex digits, as vLLM's uuid4().hex), errors too.
    const std::string health = http_call(s.port, "GET", "/health", "").header("x-request-id");
    EXPECT_EQ(health.size(), 32u);
    EXPECT_EQ(health.find_first_not_of("0123456789abcdef"), std::string::npos) << health;
    EXPECT_NE(http_call(s.port, "GET", "/health", "").header("x-request-id"), health);
    const HttpResult missing = http_call_with(s.port, "GET", "/nowhere", "", {{"X-Request-Id", "trace-43"}});
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.header("x-request-id"), "trace-43");
}

TEST(ServerRequestId, OffByDefault) {
    TestServer s(kModel);
    EXPECT_FALSE(http_call(s.port, "POST", "/v1/completions", completion_body(false)).has_header("x-request-id"));
    EXPECT_FALSE(http_call_with(s.port, "GET", "/health", "", {{"X-Request-Id", "t"}}).has_header("x-request-id"));
}

}  // namespace
}  // namespace taco::server::testing
