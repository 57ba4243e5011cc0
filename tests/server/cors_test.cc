// CORS as vLLM serves it (Starlette's CORSMiddleware): permissive by default, preflights answered before
// authentication, Access-Control-Allow-Origin on plain and streamed responses, a disallowed preflight a 400 naming
// what was refused.
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;
using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kModel = "tests/data/models/llama";

HttpResult preflight(int port, const std::string& target, const std::string& origin, const std::string& method,
                     const std::string& headers = "") {
    Fields fields = {{"Origin", origin}, {"Access-Control-Request-Method", method}};
    if (!headers.empty()) fields.emplace_back("Access-Control-Request-Headers", headers);
    return http_call_with(port, "OPTIONS", target, "", fields);
}

std::string completion_body(bool stream) {
    return json{{"prompt", json::array({1, 2})}, {"max_tokens", 2}, {"stream", stream}}.dump();
}

TEST(ServerCors, DefaultsAllowEveryOriginAndAPreflightNeedsNoKey) {
    ApiServerOptions options;
    options.api_keys = {"sekret"};
    TestServer s(kModel, options);
    const HttpResult pre =
        preflight(s.port, "/v1/chat/completions", "https://app.example", "POST", "Authorization, Content-Type");
    EXPECT_EQ(pre.status, 200) << pre.body;
    EXPECT_EQ(pre.body, "OK");
    EXPECT_EQ(pre.header("access-control-allow-origin"), "*");
    EXPECT_EQ(pre.header("access-control-allow-methods"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
    EXPECT_EQ(pre.header("access-control-allow-headers"), "Authorization, Content-Type");  // mirrored under "*"
    EXPECT_EQ(pre.header("access-control-max-age"), "600");
    EXPECT_FALSE(pre.has_header("access-control-allow-credentials"));

    // The real request, whole and streamed: "*" (no cookie); the key is still required for /v1/*.
    Fields origin = {{"Origin", "https://app.example"}, {"Authorization", "Bearer sekret"}};
    for (bool stream : {false, true}) {
        const HttpResult r = http_call_with(s.port, "POST", "/v1/completions", completion_body(stream), origin);
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.header("access-control-allow-origin"), "*") << "stream " << stream;
    }
    const HttpResult refused = http_call_with(s.port, "GET", "/v1/models", "", {{"Origin", "https://app.example"}});
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(refused.header("access-control-allow-origin"), "*");  // the browser page can read why
    // A request with a cookie has its origin named instead of "*".
    const HttpResult cookie =
        http_call_with(s.port, "GET", "/health", "", {{"Origin", "https://app.example"}, {"Cookie", "a=b"}});
    EXPECT_EQ(cookie.header("access-control-allow-origin"), "https://app.example");
    EXPECT_EQ(cookie.header("vary"), "Origin");
    // No Origin: no CORS headers; OPTIONS that is no preflight is routed (and refused as any other method).
    EXPECT_FALSE(http_call(s.port, "GET", "/health", "").has_header("access-control-allow-origin"));
    EXPECT_EQ(http_call_with(s.port, "OPTIONS", "/v1/models", "", {{"Authorization", "Bearer sekret"}}).status, 405);
}

TEST(ServerCors, AnOriginListIsMirroredAndAnyOtherOriginIsRefused) {
    ApiServerOptions options;
    options.cors.allowed_origins = {"https://good.example"};
    options.cors.allowed_methods = {"GET", "POST"};
    options.cors.allowed_headers = {"Authorization", "X-Custom"};
    options.cors.allow_credentials = true;
    TestServer s(kModel, options);

    const HttpResult ok =
        preflight(s.port, "/v1/completions", "https://good.example", "POST", "x-custom, content-type");
    EXPECT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(ok.header("access-control-allow-origin"), "https://good.example");
    EXPECT_EQ(ok.header("vary"), "Origin");
    EXPECT_EQ(ok.header("access-control-allow-methods"), "GET, POST");
    // The listed headers with the CORS-safelisted ones, sorted.
    EXPECT_EQ(ok.header("access-control-allow-headers"),
              "Accept, Accept-Language, Authorization, Content-Language, Content-Type, X-Custom");
    EXPECT_EQ(ok.header("access-control-allow-credentials"), "true");

    const HttpResult bad = preflight(s.port, "/v1/completions", "https://evil.example", "DELETE", "X-Other");
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.body, "Disallowed CORS origin, method, headers");
    EXPECT_FALSE(bad.has_header("access-control-allow-origin"));
    EXPECT_EQ(preflight(s.port, "/v1/completions", "https://good.example", "PUT").body, "Disallowed CORS method");

    // Plain and streamed responses name an allowed origin; a disallowed one gets no Allow-Origin.
    for (bool stream : {false, true}) {
        const HttpResult r = http_call_with(s.port, "POST", "/v1/completions", completion_body(stream),
                                            {{"Origin", "https://good.example"}});
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.header("access-control-allow-origin"), "https://good.example") << "stream " << stream;
        EXPECT_EQ(r.header("access-control-allow-credentials"), "true");
        EXPECT_EQ(r.header("vary"), "Origin");
    }
    const HttpResult other = http_call_with(s.port, "GET", "/health", "", {{"Origin", "https://evil.example"}});
    EXPECT_EQ(other.status, 200);
    EXPECT_FALSE(other.has_header("access-control-allow-origin"));
}

TEST(ServerCors, AnEntryWithControlCharactersIsRefusedAtStart) {
    CorsOptions cors;
    cors.allowed_origins = {"https://a.example\r\nX-Injected: 1"};
    EXPECT_FALSE(cors.validate());
    cors.allowed_origins = {""};
    EXPECT_FALSE(cors.validate());
    cors.allowed_origins = {"https://a.example"};
    EXPECT_TRUE(cors.validate());
}

}  // namespace
}  // namespace taco::server::testing
