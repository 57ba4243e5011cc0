// Hostile request bodies (core/limits.h): deep nesting, huge n / best_of, long prompt lists, context-length
// errors. Each gets a 400 naming the field and the limit; the server keeps serving.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "server/request_json.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

json error_of(const HttpResult& r) {
    json body = json::parse(r.body, nullptr, false);
    return body.is_object() && body.contains("error") ? body["error"] : json();
}

void expect_error(const HttpResult& r, int status, const std::string& needle, const json& param) {
    EXPECT_EQ(r.status, status) << r.body;
    const json e = error_of(r);
    ASSERT_TRUE(e.is_object()) << r.body;
    EXPECT_NE(e["message"].get<std::string>().find(needle), std::string::npos) << r.body;
    EXPECT_EQ(e["param"], param) << r.body;
}

std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }

TEST(ServerLimits, DeepNestingInAnyEchoedFieldIsA400NamingTheLimit) {
    TestServer s("tests/data/models/llama");
    const std::string deep = nested(50000);
    for (const char* field : {"max_tokens", "stop", "prompt", "logit_bias", "n", "temperature"}) {
        const std::string body = std::string("{\"prompt\": [1, 2], \"") + field + "\": " + deep + "}";
        expect_error(http_call(s.port, "POST", "/v1/completions", body), 400, "nested deeper than 128", nullptr);
    }
    expect_error(http_call(s.port, "POST", "/detokenize", "{\"tokens\": " + deep + "}"), 400, "nested deeper", nullptr);
    // Within the limit, the value is echoed in a bounded rendering.
    const HttpResult r =
        http_call(s.port, "POST", "/v1/completions", "{\"prompt\": [1], \"max_tokens\": " + nested(100) + "}");
    expect_error(r, 400, "'max_tokens' must be an integer, got [[[[[...]]]]]", "max_tokens");
    EXPECT_LT(error_of(r)["message"].get<std::string>().size(), 300u);
    EXPECT_EQ(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 1}}).status, 200);
}

TEST(ServerLimits, LongValuesAreQuotedBoundedInErrors) {
    TestServer s("tests/data/models/llama");
    json stop = json::array();
    for (int i = 0; i < 100000; ++i) stop.push_back("some stop string");
    stop.push_back(3);
    const HttpResult r = post(s.port, "/v1/completions", {{"prompt", {1}}, {"stop", stop}});
    expect_error(r, 400, "'stop' must be a string or a list of strings", "stop");
    EXPECT_LT(error_of(r)["message"].get<std::string>().size(), 400u);
}

TEST(ServerLimits, WrongTypesInNestedFieldsAreA400NotA500) {
    TestServer s("models/demo");
    expect_error(post(s.port, "/tokenize", {{"prompt", "hi"}, {"return_token_strs", "yes"}}), 400,
                 "'return_token_strs' must be true or false", "return_token_strs");
    expect_error(post(s.port, "/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", {{{"type", 7}, {"text", "hi"}}}}}}}}),
                 400, "parts are supported", "messages");
}

TEST(ServerLimits, HugeNAndBestOfAreRefusedBeforeAnyWork) {
    TestServer s("tests/data/models/llama");
    for (const char* key : {"n", "best_of"}) {
        for (int64_t value : {int64_t(1000000000), int64_t(1000000), int64_t(257)}) {
            expect_error(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"temperature", 1}, {key, value}}), 400,
                         "at most 256", key);
            expect_error(
                post(s.port, "/v1/chat/completions",
                     {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"temperature", 1}, {key, value}}),
                400, "at most 256", key);
        }
    }
    EXPECT_EQ(
        post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"temperature", 1}, {"n", 2}, {"max_tokens", 1}}).status,
        200);
}

TEST(ServerLimits, PromptListsCannotPassThePendingLimit) {
    ApiServerOptions options;
    options.max_pending_requests = 16;
    TestServer s("tests/data/models/llama", options);
    json prompts = json::array();
    for (int i = 0; i < 100000; ++i) prompts.push_back("hi");
    expect_error(post(s.port, "/v1/completions", {{"prompt", prompts}}), 400, "100000 prompts", "prompt");
    // prompts x samples counts: 4 x 5 = 20 > 16.
    json four = {{1}, {2}, {3}, {4}};
    expect_error(post(s.port, "/v1/completions", {{"prompt", four}, {"temperature", 1}, {"n", 5}}), 400,
                 "--max-pending-requests", "prompt");
    expect_error(post(s.port, "/v1/completions", {{"prompt", {1}}, {"temperature", 1}, {"n", 17}}), 400,
                 "--max-pending-requests", "n");
    EXPECT_EQ(
        post(s.port, "/v1/completions", {{"prompt", four}, {"temperature", 1}, {"n", 4}, {"max_tokens", 1}}).status,
        200);
}

TEST(ServerLimits, ContextLengthErrorsNameTheField) {
    TestServer s("tests/data/models/llama");  // max_model_len 128
    std::vector<int> long_prompt(200, 1);
    expect_error(post(s.port, "/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 1}}), 400,
                 "maximum context length is 128", "prompt");
    expect_error(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 500}}), 400,
                 "maximum context length is 128", "max_tokens");
    expect_error(post(s.port, "/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", INT64_MAX}}), 400,
                 "maximum context length is 128", "max_tokens");
}

// Integers past int64 are refused as sent, never wrapped to a negative value and echoed as one.
TEST(ServerLimits, IntegersPastInt64AreEchoedAsSent) {
    TestServer s("tests/data/models/llama");
    for (const char* key : {"max_tokens", "n", "seed", "top_k"}) {
        const std::string body = std::string(R"({"prompt": [1, 2], ")") + key + R"(": 18446744073709551615})";
        expect_error(http_call(s.port, "POST", "/v1/completions", body), 400,
                     std::string("'") + key + "' must be an integer within int64, got 18446744073709551615", key);
    }
}

// A schema may come as its JSON text (guided_json, response_format's schema, structured_outputs.json): that text
// is parsed with the same nesting limit as the body (it once reached a recursive dump() and overflowed the stack).
TEST(ServerLimits, DeepNestingInsideASchemaGivenAsTextIsA400) {
    TestServer s("models/demo");
    const std::string deep = nested(100000);
    const json prompt = {1, 2};
    expect_error(post(s.port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}, {"guided_json", deep}}), 400,
                 "nested deeper than 128", "guided_json");
    expect_error(post(s.port, "/v1/completions",
                      {{"prompt", prompt}, {"max_tokens", 1}, {"structured_outputs", {{"json", deep}}}}),
                 400, "nested deeper than 128", "structured_outputs.json");
    const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", deep}}}};
    expect_error(
        post(s.port, "/v1/chat/completions",
             {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}, {"response_format", format}}),
        400, "nested deeper than 128", "response_format");
    expect_error(post(s.port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}, {"guided_json", "{\"a\": "}}),
                 400, "'guided_json' is not valid JSON", "guided_json");
    const HttpResult fine = post(s.port, "/v1/completions",
                                 {{"prompt", prompt}, {"max_tokens", 1}, {"guided_json", R"({"type": "integer"})"}});
    EXPECT_EQ(fine.status, 200) << fine.body;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The time bounds below tell linear work from the quadratic work they caught (6.6-17 s in a release build). Sanitizer
// builds (scripts/sanitize.sh) run the same work several times slower, so the bounds stretch there by as much: under
// TSan the 300k-message body alone took 5.7 s to parse.
#if defined(__SANITIZE_THREAD__)
constexpr double kSlowdown = 10;
#elif defined(__SANITIZE_ADDRESS__)
constexpr double kSlowdown = 3;
#else
constexpr double kSlowdown = 1;
#endif

// Work per request grows linearly with the body, whatever its shape: nlohmann's callback parser (once used to name
// the field of a number overflow) rescanned the parent list at every object's end (200k messages: 17 s), and the
// template context and a re-parse of chat_template_kwargs searched their keys linearly per key (40k keys: 6.6 s).
TEST(ServerLimits, ManyObjectsOrKeysInABodyCostLinearTime) {
    std::string body = R"({"messages": [)";
    for (int i = 0; i < 300000; ++i) body += (i ? "," : "") + std::string(R"({"role":"user","content":"hi"})");
    body += "]}";
    ApiError error;
    auto start = std::chrono::steady_clock::now();
    auto parsed = parse_request_json(body, error);
    ASSERT_TRUE(parsed) << error.message;
    EXPECT_EQ((*parsed)["messages"].size(), 300000u);
    EXPECT_LT(seconds_since(start), 5.0 * kSlowdown);
    // The field of an overflowing number is still named, after as many objects.
    body.insert(body.size() - 2, R"(,{"role":"user","content":"hi","n":1e999})");
    EXPECT_FALSE(parse_request_json(body, error));
    EXPECT_EQ(error.param, "messages[300000].n");

    TestServer s("models/demo");
    json kwargs = json::object();
    for (int i = 0; i < 100000; ++i) kwargs["k" + std::to_string(i)] = i;
    start = std::chrono::steady_clock::now();
    const HttpResult r = post(
        s.port, "/tokenize", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"chat_template_kwargs", kwargs}});
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
    EXPECT_LT(seconds_since(start), 5.0 * kSlowdown);
}

// A schema's size costs linear work: an object of 5,000 optional properties once grew a quadratic grammar until the
// process was killed; now a run that long is a 400 naming it, and 1,000 optional properties are served.
TEST(ServerLimits, LargeObjectSchemasAreServedOrRefusedNamingTheirSize) {
    TestServer s("models/demo");
    auto schema_of = [](int n) {
        json properties = json::object();
        for (int i = 0; i < n; ++i) properties["field_" + std::to_string(i)] = {{"type", "integer"}};
        return json{{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    };
    const json prompt = {1, 2};
    auto start = std::chrono::steady_clock::now();
    expect_error(
        post(s.port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}, {"guided_json", schema_of(5000)}}), 400,
        "the object has 5000 properties, 5000 of them optional in a row", "guided_json");
    EXPECT_LT(seconds_since(start), 5.0 * kSlowdown);
    start = std::chrono::steady_clock::now();
    const HttpResult r = post(
        s.port, "/v1/completions",
        {{"prompt", prompt}, {"max_tokens", 30}, {"seed", 1}, {"temperature", 1}, {"guided_json", schema_of(1000)}});
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    EXPECT_LT(seconds_since(start), 30.0 * kSlowdown);
}

}  // namespace
}  // namespace taco::server::testing
