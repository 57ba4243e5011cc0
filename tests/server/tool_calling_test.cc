// Tool calling over HTTP: tools and tool history reach the chat template as transformers renders them; on the demo
// model, tool_choice "required" or a named function gives calls that are valid for their tools' schemas (the
// grammar forces them), whole and streamed; auto tool choice, reasoning_content, and the 400s for what is not
// served.
#include <fstream>

#include <gtest/gtest.h>

#include "server/openai_request.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* kDemo = "models/demo";

json ask_text() { return json::array({{{"role", "user"}, {"content", "Hi"}}}); }

ojson read_json(const std::string& rel) {
    std::ifstream in(std::string(TACO_SOURCE_DIR) + "/" + rel);
    return ojson::parse(in);
}

// An OpenAI client's form of a conversation: tool-call arguments as JSON text.
ojson as_client_sends(ojson messages) {
    for (ojson& m : messages)
        if (m.contains("tool_calls"))
            for (ojson& call : m["tool_calls"])
                if (!call["function"]["arguments"].is_string())
                    call["function"]["arguments"] = call["function"]["arguments"].dump();
    return messages;
}

// The request path (render_chat) renders tool conversations byte for byte as transformers did with dict arguments
// (tests/data/chat goldens): tools as sent, assistant tool_calls with their arguments turned back into objects,
// tool messages with tool_call_id and name.
TEST(ServerToolHistory, ToolConversationsRenderAsTransformersRendersThem) {
    const ojson templates = read_json("tests/data/chat/chat_templates.json");
    const ojson conversations = read_json("tests/data/chat/conversations.json");
    std::ifstream goldens(std::string(TACO_SOURCE_DIR) + "/tests/data/chat/chat_goldens.jsonl");
    int checked = 0;
    for (std::string line; std::getline(goldens, line);) {
        const ojson golden = ojson::parse(line);
        const std::string conv_name = golden["conversation"].get<std::string>();
        if (conv_name != "tools_dict_arguments" && conv_name != "tools_only_user") continue;
        const std::string name = golden["template"].get<std::string>();
        SCOPED_TRACE(name + " x " + conv_name);
        const ojson& info = templates.at(name);
        auto chat_template = ChatTemplate::from_string(info["template"].get<std::string>(),
                                                       info["special_tokens"].value("bos_token", std::string()),
                                                       info["special_tokens"].value("eos_token", std::string()));
        ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
        const ojson* conversation = nullptr;
        for (const ojson& c : conversations)
            if (c["name"] == conv_name) conversation = &c;
        ASSERT_NE(conversation, nullptr);
        ojson body = {{"messages", as_client_sends((*conversation)["messages"])},
                      {"tools", (*conversation)["tools"]},
                      {"add_generation_prompt", golden["add_generation_prompt"]},
                      // The goldens' clock (llama 3.2 writes today's date).
                      {"chat_template_kwargs", {{"date_string", "15 Jan 2026"}}}};
        ParseContext ctx;
        ctx.chat_template = &*chat_template;
        ApiError error;
        const json sorted = json::parse(body.dump());
        auto rendered = render_chat(sorted, ctx, error, &body);
        ASSERT_TRUE(rendered) << error.message;
        EXPECT_EQ(*rendered, golden["output"].get<std::string>());
        ++checked;
    }
    EXPECT_EQ(checked, 16);
}

// documents reach the template as transformers passes them (RAG templates read `documents`).
TEST(ServerToolHistory, DocumentsReachTheTemplate) {
    auto chat_template = ChatTemplate::from_string(
        "{% if documents %}{% for d in documents %}[{{ d.title }}: {{ d.text }}]{% endfor %}{% endif %}"
        "{{ messages[0].content }}"
        "{% if documents is none %}(none){% endif %}");
    ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
    ParseContext ctx;
    ctx.chat_template = &*chat_template;
    ApiError error;
    json body = {{"messages", ask_text()},
                 {"documents", {{{"title", "A"}, {"text", "one"}}, {{"title", "B"}, {"text", "two"}}}}};
    auto rendered = render_chat(body, ctx, error);
    ASSERT_TRUE(rendered) << error.message;
    EXPECT_EQ(*rendered, "[A: one][B: two]Hi");
    body.erase("documents");
    EXPECT_EQ(render_chat(body, ctx, error).value_or(""), "Hi(none)");
    body["documents"] = "not a list";
    EXPECT_FALSE(render_chat(body, ctx, error));
    EXPECT_EQ(error.param, "documents");
}

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
      "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "description": "Time in a zone",
    "parameters": {"type": "object", "properties": {"offset": {"type": "integer", "minimum": -12, "maximum": 14}},
      "required": ["offset"], "additionalProperties": false}}}
])");

json ask() { return json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}}); }

void expect_valid_call(const json& call) {
    ASSERT_EQ(call["type"], "function") << call;
    ASSERT_TRUE(call["id"].is_string()) << call;
    const std::string name = call["function"]["name"].get<std::string>();
    const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << call;
    if (name == "get_weather") {
        EXPECT_EQ(args.size(), 2u) << args;
        ASSERT_TRUE(args["city"].is_string()) << args;
        EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit") << args;
    } else {
        ASSERT_EQ(name, "get_time");
        EXPECT_EQ(args.size(), 1u) << args;
        ASSERT_TRUE(args["offset"].is_number_integer()) << args;
        EXPECT_GE(args["offset"].get<int>(), -12);
        EXPECT_LE(args["offset"].get<int>(), 14);
    }
}

ApiServerOptions with_parser(const std::string& parser) {
    ApiServerOptions options;
    options.tools.enable_auto_tool_choice = true;
    options.tools.tool_call_parser = *tool_call_format(parser);
    return options;
}

// The tool calls of a stream, rebuilt from its deltas as a client does: the first delta of each call has its id,
// type and name (no arguments), the next ones only argument fragments.
json calls_of_stream(const std::string& body, std::string* finish_reason) {
    bool done = false;
    json calls = json::array();
    for (const json& e : sse_events(body, &done)) {
        if (e["choices"].empty()) continue;
        const json& choice = e["choices"][0];
        if (!choice["finish_reason"].is_null()) *finish_reason = choice["finish_reason"];
        if (!choice["delta"].contains("tool_calls")) continue;
        for (const json& d : choice["delta"]["tool_calls"]) {
            const size_t index = d["index"].get<size_t>();
            if (index == calls.size()) {
                EXPECT_TRUE(d.contains("id") && d["type"] == "function" && d["function"].contains("name")) << d;
                EXPECT_FALSE(d["function"].contains("arguments")) << d;
                calls.push_back({{"id", d["id"]},
                                 {"type", "function"},
                                 {"function", {{"name", d["function"]["name"]}, {"arguments", ""}}}});
                continue;
            }
            EXPECT_LT(index, calls.size()) << d;
            EXPECT_FALSE(d.contains("id")) << d;
            calls[index]["function"]["arguments"] = calls[index]["function"]["arguments"].get<std::string>() +
                                                    d["function"]["arguments"].get<std::string>();
        }
    }
    EXPECT_TRUE(done);
    return calls;
}

TEST(ServerToolCalling, RequiredHermesCallsAreValidForTheirSchemas) {
    TestServer s(kDemo, with_parser("hermes"));
    json request = {{"messages", ask()}, {"tools", kTools},  {"tool_choice", "required"}, {"n", 4},
                    {"seed", 7},         {"max_tokens", 200}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json r_body = r.json();
    for (const json& choice : r_body["choices"]) {
        EXPECT_EQ(choice["finish_reason"], "tool_calls") << choice;
        const json& calls = choice["message"]["tool_calls"];
        ASSERT_GE(calls.size(), 1u) << choice;
        for (const json& call : calls) expect_valid_call(call);
        EXPECT_TRUE(choice["message"]["content"].is_null()) << choice;
    }
    // Streamed with the same seed: the deltas rebuild the same calls.
    request["n"] = 1;
    HttpResult whole = post(s.port, "/v1/chat/completions", request);
    request["stream"] = true;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string finish;
    const json calls = calls_of_stream(streamed.body, &finish);
    EXPECT_EQ(finish, "tool_calls");
    const json expected = whole.json()["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), expected.size()) << streamed.body;
    for (size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(calls[i]["function"], expected[i]["function"]);
        expect_valid_call(calls[i]);
    }
}

TEST(ServerToolCalling, NamedFunctionAndSingleCallAreHonoured) {
    for (const std::string parser : {"hermes", "llama3_json", "mistral", "pythonic"}) {
        SCOPED_TRACE(parser);
        TestServer s(kDemo, with_parser(parser));
        json named = {{"messages", ask()},
                      {"tools", kTools},
                      {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                      {"n", 2},
                      {"seed", 3},
                      {"max_tokens", 120}};
        HttpResult r = post(s.port, "/v1/chat/completions", named);
        ASSERT_EQ(r.status, 200) << r.body;
        const json r_body = r.json();
        for (const json& choice : r_body["choices"]) {
            EXPECT_EQ(choice["finish_reason"], "stop") << choice;  // as OpenAI for a forced function
            ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice;
            EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_time");
            expect_valid_call(choice["message"]["tool_calls"][0]);
        }
        json single = {{"messages", ask()},
                       {"tools", kTools},
                       {"tool_choice", "required"},
                       {"parallel_tool_calls", false},
                       {"n", 3},
                       {"seed", 5},
                       {"max_tokens", 200}};
        HttpResult one = post(s.port, "/v1/chat/completions", single);
        ASSERT_EQ(one.status, 200) << one.body;
        const json one_body = one.json();
        for (const json& choice : one_body["choices"]) {
            EXPECT_EQ(choice["finish_reason"], "tool_calls") << choice;
            ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << choice;
            expect_valid_call(choice["message"]["tool_calls"][0]);
        }
    }
}

// Without a parser, "required" and a named function are constrained the way vLLM does it (a JSON list of
// {name, parameters}; the named function's arguments alone), and still come back as tool_calls.
TEST(ServerToolCalling, WithoutAParserRequiredAndNamedUseVllmsJson) {
    TestServer s(kDemo);
    json request = {{"messages", ask()}, {"tools", kTools},  {"tool_choice", "required"}, {"n", 2},
                    {"seed", 9},         {"max_tokens", 200}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json r_body = r.json();
    for (const json& choice : r_body["choices"]) {
        EXPECT_EQ(choice["finish_reason"], "tool_calls") << choice;
        ASSERT_GE(choice["message"]["tool_calls"].size(), 1u) << choice;
        for (const json& call : choice["message"]["tool_calls"]) expect_valid_call(call);
    }
    request["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    request["stream"] = true;
    request["n"] = 1;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string finish;
    const json calls = calls_of_stream(streamed.body, &finish);
    EXPECT_EQ(finish, "stop");
    ASSERT_EQ(calls.size(), 1u) << streamed.body;
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    expect_valid_call(calls[0]);
}

TEST(ServerToolCalling, AutoChoiceParsesWhateverTheModelWrites) {
    TestServer s(kDemo, with_parser("hermes"));
    json request = {{"messages", ask()}, {"tools", kTools}, {"seed", 1}, {"max_tokens", 24}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = r.json()["choices"][0];
    // The demo model writes no <tool_call>: all of it is content, the finish reason the engine's.
    EXPECT_TRUE(choice["message"]["tool_calls"].empty()) << choice;
    EXPECT_TRUE(choice["message"]["content"].is_string()) << choice;
    EXPECT_NE(choice["finish_reason"], "tool_calls");
    request["stream"] = true;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(streamed.status, 200);
    bool done = false;
    std::string text;
    for (const json& e : sse_events(streamed.body, &done))
        if (!e["choices"].empty()) text += e["choices"][0]["delta"].value("content", "");
    EXPECT_EQ(text, choice["message"]["content"].get<std::string>());
}

// tool_choice "auto" with a strict tool: the reply is free text or calls in the parser's tags, every call valid for
// its schema (the grammar allows the tag only as the start of such a call).
TEST(ServerToolCalling, StrictToolsUnderAutoAreValidWhenCalled) {
    json strict = kTools;
    for (json& tool : strict) tool["function"]["strict"] = true;
    for (const std::string parser : {"hermes", "mistral"}) {
        SCOPED_TRACE(parser);
        TestServer s(kDemo, with_parser(parser));
        json request = {{"messages", ask()}, {"tools", strict}, {"n", 6}, {"seed", 8}, {"max_tokens", 60}};
        HttpResult r = post(s.port, "/v1/chat/completions", request);
        ASSERT_EQ(r.status, 200) << r.body;
        const json r_body = r.json();
        for (const json& choice : r_body["choices"]) {
            for (const json& call : choice["message"]["tool_calls"]) expect_valid_call(call);
            if (choice["message"]["tool_calls"].empty()) {
                const std::string tag = parser == "hermes" ? "<tool_call>" : "[TOOL_CALLS]";
                EXPECT_EQ(choice["message"]["content"].get<std::string>().find(tag), std::string::npos) << choice;
            }
        }
    }
}

void expect_400(const HttpResult& r, const std::string& needle, const std::string& param) {
    EXPECT_EQ(r.status, 400) << r.body;
    const json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body;
    EXPECT_NE(body["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
    EXPECT_EQ(body["error"]["param"], param) << r.body;
}

TEST(ServerToolCalling, WhatIsNotServedIsA400NamingIt) {
    TestServer plain(kDemo);
    const json base = {{"messages", ask()}, {"tools", kTools}};
    // As vLLM: tools mean tool_choice "auto", which needs the flags.
    expect_400(post(plain.port, "/v1/chat/completions", base), "--enable-auto-tool-choice", "tool_choice");
    json none = base;
    none["tool_choice"] = "none";
    EXPECT_EQ(post(plain.port, "/v1/chat/completions", none).status, 200);
    // The template gets the tools under "none" too (vLLM), unless --exclude-tools-when-tool-choice-none.
    ApiServerOptions listing;
    listing.chat_template = "{% if tools %}[{{ tools | length }} tools]{% endif %}{{ messages[0].content }}";
    TestServer lists(kDemo, listing);
    listing.tools.exclude_tools_when_tool_choice_none = true;
    TestServer hides(kDemo, listing);
    json tokenize = {{"prompt", "[2 tools]What is the weather in Paris?"}, {"add_special_tokens", false}};
    const json with_tools = post(lists.port, "/tokenize", tokenize).json()["tokens"];
    none["max_tokens"] = 1;
    none["return_token_ids"] = true;
    const json listed = post(lists.port, "/v1/chat/completions", none).json();
    const json hidden = post(hides.port, "/v1/chat/completions", none).json();
    EXPECT_EQ(listed["choices"][0]["prompt_token_ids"], with_tools);
    EXPECT_LT(hidden["usage"]["prompt_tokens"].get<int>(), listed["usage"]["prompt_tokens"].get<int>());
    TestServer s(kDemo, with_parser("hermes"));
    auto with = [&](const char* key, const json& value) {
        json r = base;
        r[key] = value;
        return post(s.port, "/v1/chat/completions", r);
    };
    expect_400(with("tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}), "nope", "tool_choice");
    expect_400(with("tool_choice", "sometimes"), "sometimes", "tool_choice");
    expect_400(with("tools", json::array({{{"type", "code_interpreter"}}})), "function", "tools");
    expect_400(with("tools", json::array({{{"type", "function"}, {"function", {{"name", "bad name"}}}}})), "name",
               "tools");
    expect_400(with("tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"extra", 1}}}}})),
               "extra", "tools");
    // A strict tool under "auto" needs a parser whose calls start at a tag (hermes, mistral).
    json strict = kTools;
    strict[0]["function"]["strict"] = true;
    TestServer llama(kDemo, with_parser("llama3_json"));
    expect_400(post(llama.port, "/v1/chat/completions", {{"messages", ask()}, {"tools", strict}}), "strict", "tools");
    json bad_schema = kTools;
    bad_schema[1]["function"]["parameters"]["properties"]["offset"]["multipleOf"] = 2;
    json required = base;
    required["tools"] = bad_schema;
    required["tool_choice"] = "required";
    expect_400(post(s.port, "/v1/chat/completions", required), "multipleOf", "tools");
    required["tools"] = kTools;
    required["response_format"] = {{"type", "json_object"}};
    expect_400(post(s.port, "/v1/chat/completions", required), "constrains", "tool_choice");
    expect_400(post(s.port, "/v1/chat/completions", {{"messages", ask()}, {"tool_choice", "required"}}), "tools",
               "tool_choice");
    expect_400(post(s.port, "/v1/completions", {{"prompt", "x"}, {"tools", kTools}}), "chat", "tools");
    expect_400(with("functions", json::array()), "functions", "functions");
}

// --reasoning-parser: the reply's thinking comes back as reasoning_content (streamed too); structured output applies
// to the answer, from the first token when the prompt closed the think block.
TEST(ServerReasoning, ThinkingIsReasoningContentAndStructuredOutputFollowsIt) {
    ApiServerOptions options;
    options.tools.reasoning_parser = ReasoningFormat::kDeepSeekR1;
    TestServer s(kDemo, options);
    json request = {{"messages", ask()}, {"seed", 2}, {"max_tokens", 16}};
    HttpResult r = post(s.port, "/v1/chat/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json message = r.json()["choices"][0]["message"];
    // The demo model never writes </think>: as deepseek_r1 reads it, all of it is reasoning.
    ASSERT_TRUE(message["reasoning_content"].is_string()) << message;
    EXPECT_FALSE(message["reasoning_content"].get<std::string>().empty());
    EXPECT_TRUE(message["content"].is_null()) << message;
    request["stream"] = true;
    HttpResult streamed = post(s.port, "/v1/chat/completions", request);
    bool done = false;
    std::string reasoning, content;
    for (const json& e : sse_events(streamed.body, &done)) {
        if (e["choices"].empty()) continue;
        reasoning += e["choices"][0]["delta"].value("reasoning_content", "");
        content += e["choices"][0]["delta"].value("content", "");
    }
    EXPECT_EQ(reasoning, message["reasoning_content"].get<std::string>());
    EXPECT_EQ(content, "");
    // vLLM's include_reasoning false: the reasoning is left out.
    json without = {{"messages", ask()}, {"seed", 2}, {"max_tokens", 16}, {"include_reasoning", false}};
    HttpResult hidden = post(s.port, "/v1/chat/completions", without);
    ASSERT_EQ(hidden.status, 200) << hidden.body;
    EXPECT_TRUE(hidden.json()["choices"][0]["message"]["reasoning_content"].is_null()) << hidden.body;

    // The grammar of tool_choice "required" waits for </think>: the thinking stays free text (here all of the
    // reply, the demo model never closing its think block).
    json tools = {{"messages", ask()}, {"seed", 2}, {"max_tokens", 16}, {"tools", kTools}, {"tool_choice", "required"}};
    HttpResult thinking = post(s.port, "/v1/chat/completions", tools);
    ASSERT_EQ(thinking.status, 200) << thinking.body;
    const json t = thinking.json()["choices"][0];
    EXPECT_EQ(t["finish_reason"], "length") << t;
    EXPECT_TRUE(t["message"]["tool_calls"].empty()) << t;
    EXPECT_EQ(t["message"]["reasoning_content"], message["reasoning_content"]) << t;

    // A template that closes the think block in the prompt (Qwen3's enable_thinking=false): the answer is content,
    // and the schema holds from its first token.
    ApiServerOptions qwen3;
    qwen3.tools.reasoning_parser = ReasoningFormat::kQwen3;
    qwen3.chat_template =
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    TestServer q(kDemo, qwen3);
    json schema = {{"type", "object"},
                   {"properties", {{"ok", {{"type", "boolean"}}}}},
                   {"required", {"ok"}},
                   {"additionalProperties", false}};
    json structured = {
        {"messages", ask()},
        {"seed", 4},
        {"max_tokens", 40},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}}}};
    HttpResult answer = post(q.port, "/v1/chat/completions", structured);
    ASSERT_EQ(answer.status, 200) << answer.body;
    const json m = answer.json()["choices"][0]["message"];
    EXPECT_TRUE(m["reasoning_content"].is_null()) << m;
    const json value = json::parse(m["content"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(value.is_object() && value["ok"].is_boolean()) << m;
}

}  // namespace
}  // namespace taco::server::testing
