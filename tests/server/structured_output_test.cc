// Structured output over HTTP on the demo model: response_format (json_object, json_schema), vLLM's guided_* fields
// and the structured_outputs object constrain what comes back; bad constraints are 400s naming the problem.
#include <regex>

#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kDemo = "models/demo";

json ask() { return json::array({{{"role", "user"}, {"content", "Describe the weather."}}}); }

const json kWeather = json::parse(R"({"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 12}, "celsius": {"type": "integer", "minimum": -40, "maximum": 50},
    "kind": {"enum": ["sun", "rain", "snow"]}}, "required": ["city", "celsius", "kind"], "additionalProperties": false})");

void expect_weather(const std::string& text) {
    json value = json::parse(text, nullptr, false);
    ASSERT_TRUE(value.is_object()) << text;
    EXPECT_EQ(value.size(), 3u) << text;
    ASSERT_TRUE(value["city"].is_string()) << text;
    ASSERT_TRUE(value["celsius"].is_number_integer()) << text;
    EXPECT_GE(value["celsius"].get<int>(), -40);
    EXPECT_LE(value["celsius"].get<int>(), 50);
    EXPECT_TRUE(value["kind"] == "sun" || value["kind"] == "rain" || value["kind"] == "snow") << text;
}

// A reply's choices, by value. A range-for over r.json()["choices"] reads freed memory: the parsed body is a temporary
// that dies before the first iteration (operator[] returns a reference into it, which extends no lifetime).
json choices_of(const HttpResult& r) { return r.json().at("choices"); }

// Whether JSON text has whitespace between its tokens (what is inside its strings does not count).
bool whitespace_between_tokens(const std::string& text) {
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if (c == '"') {
            in_string = true;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            return true;
        }
    }
    return false;
}

void expect_error(const HttpResult& r, const std::string& needle, const std::string& param) {
    EXPECT_EQ(r.status, 400) << r.body;
    json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body;
    EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
    EXPECT_EQ(body["error"]["param"], param) << r.body;
}

TEST(ServerStructuredOutput, ChatJsonSchemaRepliesFollowTheSchema) {
    TestServer s(kDemo);
    json request = {
        {"messages", ask()},
        {"n", 3},
        {"seed", 1},
        {"max_tokens", 120},
        {"response_format",
         {{"type", "json_schema"}, {"json_schema", {{"name", "weather"}, {"schema", kWeather}, {"strict", true}}}}}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    for (const json& choice : choices_of(r)) {
        EXPECT_EQ(choice["finish_reason"], "stop") << r.body;
        expect_weather(choice["message"]["content"].get<std::string>());
    }
    // Streamed, the deltas join into a valid reply too.
    request["stream"] = true;
    request["n"] = 1;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    bool done = false;
    std::string text;
    for (const json& e : sse_events(streamed.body, &done))
        if (!e["choices"].empty()) text += e["choices"][0]["delta"].value("content", "");
    EXPECT_TRUE(done);
    expect_weather(text);
}

TEST(ServerStructuredOutput, VllmGuidedFieldsConstrainCompletions) {
    TestServer s(kDemo);
    const json base = {{"prompt", "Today"}, {"max_tokens", 60}, {"seed", 3}, {"n", 2}};
    json regex = base;
    regex["guided_regex"] = "[0-9]{3}-[a-z]{2,4}";
    HttpResult r = post(s.port, "/v1/completions", regex);
    ASSERT_EQ(r.status, 200) << r.body;
    for (const json& c : choices_of(r)) {
        EXPECT_TRUE(std::regex_match(c["text"].get<std::string>(), std::regex("[0-9]{3}-[a-z]{2,4}"))) << c["text"];
        EXPECT_EQ(c["finish_reason"], "stop");
    }
    json choice = base;
    choice["guided_choice"] = {"alpha", "beta"};
    r = post(s.port, "/v1/completions", choice);
    ASSERT_EQ(r.status, 200) << r.body;
    for (const json& c : choices_of(r)) EXPECT_TRUE(c["text"] == "alpha" || c["text"] == "beta") << c["text"];
    json grammar = base;
    grammar["guided_grammar"] = "root ::= \"(\" [xy]+ \")\"";
    r = post(s.port, "/v1/completions", grammar);
    ASSERT_EQ(r.status, 200) << r.body;
    // A sample cut by max_tokens is a prefix of the language: the demo model may go on with x and y to the end.
    for (const json& c : choices_of(r)) {
        const char* language = c["finish_reason"] == "stop" ? "\\([xy]+\\)" : "\\([xy]*";
        EXPECT_TRUE(std::regex_match(c["text"].get<std::string>(), std::regex(language))) << c;
    }
    json schema = base;
    schema["guided_json"] = kWeather.dump();  // a schema as JSON text, as vLLM accepts
    schema["guided_whitespace_pattern"] = "";
    schema["max_tokens"] = 120;
    r = post(s.port, "/v1/completions", schema);
    ASSERT_EQ(r.status, 200) << r.body;
    for (const json& c : choices_of(r)) {
        expect_weather(c["text"].get<std::string>());
        EXPECT_FALSE(whitespace_between_tokens(c["text"].get<std::string>())) << c["text"];  // none allowed there
    }
}

TEST(ServerStructuredOutput, StructuredOutputsObjectAndJsonObjectMode) {
    TestServer s(kDemo);
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", "x"}, {"max_tokens", 30}, {"structured_outputs", {{"choice", {"yes", "no"}}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json text = choices_of(r)[0]["text"];
    EXPECT_TRUE(text == "yes" || text == "no") << text;
    r = post(s.port, "/v1/chat/completions",
             {{"messages", ask()}, {"max_tokens", 60}, {"seed", 2}, {"response_format", {{"type", "json_object"}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    const json& c = body["choices"][0];
    if (c["finish_reason"] == "stop") {
        EXPECT_TRUE(json::parse(c["message"]["content"].get<std::string>(), nullptr, false).is_object())
            << c["message"]["content"];
    }
    EXPECT_EQ(c["message"]["content"].get<std::string>().rfind("{", 0), 0u) << c["message"]["content"];
}

TEST(ServerStructuredOutput, BadConstraintsAre400sNamingTheProblem) {
    TestServer s(kDemo);
    const json prompt = {{"prompt", "x"}, {"max_tokens", 5}};
    auto with = [&](const json& extra) {
        json body = prompt;
        body.update(extra);
        return post(s.port, "/v1/completions", body);
    };
    expect_error(with({{"guided_json", {{"type", "integer"}, {"multipleOf", 3}}}}), "'multipleOf' is not supported",
                 "guided_json");
    expect_error(with({{"guided_regex", "(a)\\1"}}), "backreferences", "guided_regex");
    expect_error(with({{"guided_grammar", "root ::= missing"}}), "'missing' is used but not defined", "guided_grammar");
    expect_error(with({{"guided_choice", json::array()}}), "non-empty list", "guided_choice");
    expect_error(with({{"guided_regex", "a"}, {"guided_choice", {"a"}}}), "only one", "guided_choice");
    expect_error(with({{"guided_json", "{not json"}}), "not valid JSON", "guided_json");
    expect_error(with({{"guided_regex", "a"}, {"guided_decoding_backend", "magic"}}), "'magic' is unknown",
                 "guided_decoding_backend");
    expect_error(with({{"structured_outputs", {{"structural_tag", "{}"}}}}), "structural_tag", "structured_outputs");
    expect_error(with({{"guided_whitespace_pattern", " "}}), "needs a JSON constraint", "guided_whitespace_pattern");
    expect_error(with({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}}),
                 "needs a 'schema'", "response_format");
    expect_error(
        post(
            s.port, "/v1/chat/completions",
            {{"messages", ask()},
             {"response_format",
              {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "string"}, {"format", "hostname"}}}}}}}}),
        "'hostname'", "response_format");
    // The server is still serving.
    EXPECT_EQ(with({{"guided_regex", "ok"}}).status, 200);
}

// The schema's properties come out in the request's key order, not sorted (the body is read in order for them).
TEST(ServerStructuredOutput, PropertiesFollowTheRequestKeyOrder) {
    TestServer s(kDemo);
    const std::string body = R"({"prompt": "x", "max_tokens": 80, "seed": 1, "guided_json": {"type": "object",
        "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "boolean"}, "mid": {"enum": [1, 2]}},
        "required": ["zeta", "alpha", "mid"], "additionalProperties": false}})";
    HttpResult r = http_call(s.port, "POST", "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string text = choices_of(r)[0]["text"].get<std::string>();
    const size_t zeta = text.find("\"zeta\""), alpha = text.find("\"alpha\""), mid = text.find("\"mid\"");
    ASSERT_NE(mid, std::string::npos) << text;
    EXPECT_LT(zeta, alpha) << text;
    EXPECT_LT(alpha, mid) << text;
}

TEST(ServerStructuredOutput, ServerConfigSetsTheDefaults) {
    auto config = StructuredOutputsConfig::from_json_text(
        R"({"backend": "xgrammar", "disable_any_whitespace": true, "disable_additional_properties": true})");
    ASSERT_TRUE(config.is_ok()) << config.status().message();
    ApiServerOptions options;
    options.structured_outputs = *config;
    TestServer s(kDemo, options);
    // A schema without additionalProperties: none are produced, and no whitespace between tokens.
    json open_schema = kWeather;
    open_schema.erase("additionalProperties");
    HttpResult r = post(s.port, "/v1/completions",
                        {{"prompt", "x"}, {"max_tokens", 120}, {"seed", 4}, {"n", 2}, {"guided_json", open_schema}});
    ASSERT_EQ(r.status, 200) << r.body;
    for (const json& c : choices_of(r)) {
        expect_weather(c["text"].get<std::string>());
        EXPECT_FALSE(whitespace_between_tokens(c["text"].get<std::string>())) << c["text"];
    }
    for (const char* bad : {R"({"backend": "magic"})", R"({"reasoning_parser": "qwen3"})", "[1]", "{nope"})
        EXPECT_FALSE(StructuredOutputsConfig::from_json_text(bad).is_ok()) << bad;
}

}  // namespace
}  // namespace taco::server::testing
