// vLLM's server flags that change what a response or the log says: --root-path, --enable-log-requests with
// --max-log-len, --enable-prompt-tokens-details, --disable-fastapi-docs, --default-chat-template-kwargs.
#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

constexpr const char* kModel = "tests/data/models/llama";
constexpr const char* kDemo = "models/demo";  // with a tokenizer, for text prompts

TEST(ServerRootPath, PrefixedAndUnprefixedPathsAreRoutedAndOpenApiNamesThePrefix) {
    ApiServerOptions options;
    options.root_path = "/api";
    options.api_keys = {"k"};
    TestServer s(kModel, options);
    // Behind a proxy that keeps the prefix, and one that strips it (Starlette routes both under root_path).
    EXPECT_EQ(http_call(s.port, "GET", "/api/v1/models", "", "k").status, 200);
    EXPECT_EQ(http_call(s.port, "GET", "/v1/models", "", "k").status, 200);
    // The key guards the prefixed /v1 routes too.
    EXPECT_EQ(http_call(s.port, "GET", "/api/v1/models", "").status, 401);
    const HttpResult done = post(s.port, "/api/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 2}}, "k");
    EXPECT_EQ(done.status, 200) << done.body;
    EXPECT_EQ(done.json()["usage"]["completion_tokens"], 2);
    EXPECT_EQ(http_call(s.port, "GET", "/api/health", "").status, 200);
    // Only a whole path segment is a prefix; the prefix alone is no route.
    EXPECT_EQ(http_call(s.port, "GET", "/apix/v1/models", "", "k").status, 404);
    EXPECT_EQ(http_call(s.port, "GET", "/api", "").status, 404);
    const json openapi = http_call(s.port, "GET", "/api/openapi.json", "").json();
    EXPECT_EQ(openapi["servers"], json::parse(R"([{"url": "/api"}])"));
    EXPECT_TRUE(openapi["paths"].contains("/v1/models"));

    TestServer plain(kModel);
    EXPECT_FALSE(http_call(plain.port, "GET", "/openapi.json", "").json().contains("servers"));
    EXPECT_EQ(http_call(plain.port, "GET", "/api/v1/models", "").status, 404);
}

TEST(ServerRequestLog, EnableLogRequestsLogsEachPromptCutToMaxLogLen) {
    ApiServerOptions options;
    options.log_prompts = true;
    options.max_log_len = 4;
    TestServer s(kDemo, options);
    ::testing::internal::CaptureStderr();
    const HttpResult text = post(s.port, "/v1/completions", {{"prompt", "Hello world"}, {"max_tokens", 1}});
    const HttpResult ids = post(s.port, "/v1/completions", {{"prompt", {5, 6, 7, 8, 9, 10}}, {"max_tokens", 1}});
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(text.status, 200) << text.body;
    ASSERT_EQ(ids.status, 200) << ids.body;
    const std::string text_id = text.json()["id"], ids_id = ids.json()["id"];
    EXPECT_NE(log.find("request " + text_id + ": prompt: \"Hell\"..."), std::string::npos) << log;
    EXPECT_EQ(log.find("Hello"), std::string::npos) << log;
    EXPECT_NE(log.find("request " + ids_id + ": prompt_token_ids: [5, 6, 7, 8, ...]"), std::string::npos) << log;

    TestServer quiet(kDemo);  // off by default: no prompt in the log
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(post(quiet.port, "/v1/completions", {{"prompt", "Hello world"}, {"max_tokens", 1}}).status, 200);
    EXPECT_EQ(::testing::internal::GetCapturedStderr().find("Hello"), std::string::npos);
}

TEST(ServerPromptTokensDetails, CachedTokensOnlyWithTheFlagAndAPrefixCacheHit) {
    std::vector<int> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(3 + i % 50);  // two full blocks of 16, then 8 tokens
    const json body = {{"prompt", prompt}, {"max_tokens", 1}};
    ApiServerOptions options;
    options.enable_prompt_tokens_details = true;
    TestServer s(kModel, options);
    const json first = post(s.port, "/v1/completions", body).json();
    EXPECT_FALSE(first["usage"].contains("prompt_tokens_details")) << first;  // nothing cached yet (as vLLM)
    const json second = post(s.port, "/v1/completions", body).json();
    EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"], 32) << second;
    // Streamed usage too.
    const HttpResult streamed =
        post(s.port, "/v1/completions",
             {{"prompt", prompt}, {"max_tokens", 1}, {"stream", true}, {"stream_options", {{"include_usage", true}}}});
    bool done = false;
    const auto events = sse_events(streamed.body, &done);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back()["usage"]["prompt_tokens_details"]["cached_tokens"], 32) << events.back();

    TestServer off(kModel);  // without the flag: never, cache hit or not
    post(off.port, "/v1/completions", body);
    const json again = post(off.port, "/v1/completions", body).json();
    EXPECT_FALSE(again["usage"].contains("prompt_tokens_details")) << again;
}

TEST(ServerDocs, DisableFastapiDocsTakesOpenApiJsonAway) {
    TestServer served(kModel);
    const HttpResult docs = http_call(served.port, "GET", "/openapi.json", "");
    ASSERT_EQ(docs.status, 200) << docs.body;
    EXPECT_TRUE(docs.json()["paths"].contains("/v1/chat/completions"));
    ApiServerOptions options;
    options.disable_docs = true;
    TestServer hidden(kModel, options);
    EXPECT_EQ(http_call(hidden.port, "GET", "/openapi.json", "").status, 404);
    EXPECT_EQ(http_call(hidden.port, "GET", "/v1/models", "").status, 200);  // only the document goes
}

// --default-chat-template-kwargs: every request's template sees the server's variables; a request's own
// chat_template_kwargs win key by key.
TEST(ServerChatTemplateKwargs, ServerDefaultsReachTheTemplateAndARequestsOwnWin) {
    ApiServerOptions options;
    options.chat_template = "{{ greeting }}{% for m in messages %} {{ m['content'] }}{% endfor %}{{ mark }}";
    options.default_chat_template_kwargs = {{"greeting", "Hello"}, {"mark", "!"}};
    TestServer s(kDemo, options);
    auto tokens = [&](const json& body) {
        const HttpResult r = post(s.port, "/tokenize", body);
        EXPECT_EQ(r.status, 200) << r.body;
        return r.json()["tokens"];
    };
    auto text = [&](const char* prompt) { return tokens({{"prompt", prompt}, {"add_special_tokens", false}}); };
    const json messages = {{{"role", "user"}, {"content", "world"}}};
    EXPECT_EQ(tokens({{"messages", messages}}), text("Hello world!"));
    EXPECT_EQ(tokens({{"messages", messages}, {"chat_template_kwargs", {{"greeting", "Bye"}}}}), text("Bye world!"));

    ApiServerOptions no_defaults;
    no_defaults.chat_template = options.chat_template;
    TestServer plain(kDemo, no_defaults);  // no defaults: the variables are undefined, so empty
    const HttpResult bare = post(plain.port, "/tokenize", {{"messages", messages}});
    ASSERT_EQ(bare.status, 200) << bare.body;
    EXPECT_EQ(bare.json()["tokens"], text(" world"));
}

}  // namespace
}  // namespace taco::server::testing
