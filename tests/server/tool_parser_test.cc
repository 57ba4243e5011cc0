// The tool-call and reasoning parsers on their own: each format's whole-text parse, and the streamed deltas, fed a
// few bytes at a time, joining into exactly what the whole-text parse gives.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/chat_output.h"
#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

struct Streamed {
    std::string content;
    std::vector<ToolCall> calls;     // ids and names from the first deltas, arguments joined
    bool first_deltas_named = true;  // every call's first delta had an id and a name and no arguments
};

Streamed stream(ToolCallFormat format, const std::string& text, size_t piece) {
    ToolParser parser(format);
    Streamed out;
    std::vector<ToolCallDelta> deltas;
    for (size_t i = 0; i < text.size(); i += piece) parser.feed(text.substr(i, piece), out.content, deltas);
    parser.finish(out.content, deltas);
    for (const ToolCallDelta& d : deltas) {
        if (d.index >= int64_t(out.calls.size())) {
            out.first_deltas_named =
                out.first_deltas_named && d.id && d.name && d.arguments.empty() && d.index == int64_t(out.calls.size());
            out.calls.push_back({d.id.value_or(""), d.name.value_or(""), ""});
            continue;
        }
        EXPECT_FALSE(d.id || d.name) << "a call named twice";
        out.calls[size_t(d.index)].arguments += d.arguments;
    }
    return out;
}

// The whole-text parse, and the stream in pieces of 1, 3 and 7 bytes giving the same content and calls.
ParsedToolCalls parse_both_ways(ToolCallFormat format, const std::string& text) {
    ParsedToolCalls whole = ToolParser::parse(format, text);
    for (size_t piece : {1, 3, 7}) {
        Streamed s = stream(format, text, piece);
        SCOPED_TRACE(::testing::Message() << "pieces of " << piece);
        EXPECT_EQ(s.content, whole.content.value_or(""));
        EXPECT_EQ(s.calls.size(), whole.calls.size());
        if (s.calls.size() != whole.calls.size()) continue;
        EXPECT_TRUE(s.first_deltas_named);
        for (size_t i = 0; i < s.calls.size(); ++i) {
            EXPECT_EQ(s.calls[i].name, whole.calls[i].name);
            EXPECT_EQ(s.calls[i].arguments, whole.calls[i].arguments);
        }
    }
    return whole;
}

TEST(ToolParser, HermesSplitsContentAndCalls) {
    const std::string text =
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
        "</tool_call>\n<tool_call>\n{\"arguments\": {\"q\": \"a \\\"quoted\\\" } brace\"}, \"name\": \"search\"}\n"
        "</tool_call>";
    ParsedToolCalls p = parse_both_ways(ToolCallFormat::kHermes, text);
    ASSERT_EQ(p.calls.size(), 2u);
    EXPECT_EQ(p.content, "Let me check.\n");
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, R"({"city": "Paris", "days": 3})");
    EXPECT_EQ(p.calls[1].name, "search");
    EXPECT_EQ(json::parse(p.calls[1].arguments), json({{"q", "a \"quoted\" } brace"}}));
    EXPECT_EQ(p.calls[0].id.rfind("chatcmpl-tool-", 0), 0u);
    EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

TEST(ToolParser, HermesWithoutCallsIsContentAndBrokenCallsAreContent) {
    ParsedToolCalls plain = parse_both_ways(ToolCallFormat::kHermes, "Just text, a <tool and a < sign.");
    EXPECT_TRUE(plain.calls.empty());
    EXPECT_EQ(plain.content, "Just text, a <tool and a < sign.");
    const std::string broken = "<tool_call>\n{\"name\" \"f\", \"arguments\": {\"a\": tru}}\n</tool_call>";
    ParsedToolCalls bad = parse_both_ways(ToolCallFormat::kHermes, broken);
    EXPECT_TRUE(bad.calls.empty());
    EXPECT_EQ(bad.content, broken);
    // An unclosed last tag still counts (vLLM's regex takes it), the content before it is null when empty.
    ParsedToolCalls open = parse_both_ways(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}");
    ASSERT_EQ(open.calls.size(), 1u);
    EXPECT_FALSE(open.content);
    EXPECT_EQ(open.calls[0].arguments, "{}");
}

TEST(ToolParser, Llama3JsonReadsParametersAfterThePythonTag) {
    ParsedToolCalls p = parse_both_ways(
        ToolCallFormat::kLlama3Json,
        "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": [1, 2]}}; {\"name\": \"g\", \"parameters\": {}}");
    ASSERT_EQ(p.calls.size(), 2u);
    EXPECT_FALSE(p.content);
    EXPECT_EQ(p.calls[0].arguments, R"({"x": [1, 2]})");
    EXPECT_EQ(p.calls[1].name, "g");
    ParsedToolCalls bare = parse_both_ways(ToolCallFormat::kLlama3Json, "{\"name\": \"f\", \"arguments\": {\"a\": 1}}");
    ASSERT_EQ(bare.calls.size(), 1u);
    ParsedToolCalls text = parse_both_ways(ToolCallFormat::kLlama3Json, "The answer is {not a call}.");
    EXPECT_TRUE(text.calls.empty());
    EXPECT_EQ(text.content, "The answer is {not a call}.");
}

TEST(ToolParser, MistralReadsTheListAfterToolCalls) {
    ParsedToolCalls p = parse_both_ways(
        ToolCallFormat::kMistral,
        "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"]\"}}, {\"name\": \"g\", \"arguments\": {}}]");
    ASSERT_EQ(p.calls.size(), 2u);
    EXPECT_EQ(p.content, "Sure. ");
    EXPECT_EQ(p.calls[0].arguments, R"({"s": "]"})");
    // Mistral's templates require ids of 9 letters and digits.
    EXPECT_EQ(p.calls[0].id.size(), 9u);
    for (char c : p.calls[0].id) EXPECT_TRUE(std::isalnum(uint8_t(c))) << p.calls[0].id;
    // Tokenizers v11 on: name[ARGS]arguments per call.
    ParsedToolCalls v11 = parse_both_ways(
        ToolCallFormat::kMistral, "Ok[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]ping[ARGS]{}");
    ASSERT_EQ(v11.calls.size(), 2u);
    EXPECT_EQ(v11.content, "Ok");
    EXPECT_EQ(v11.calls[0].name, "get_weather");
    EXPECT_EQ(v11.calls[0].arguments, R"({"city": "Paris"})");
    EXPECT_EQ(v11.calls[1].name, "ping");
    EXPECT_EQ(v11.calls[1].arguments, "{}");
    EXPECT_TRUE(ToolParser::parse(ToolCallFormat::kMistral, "[TOOL_CALLS]bad name[ARGS]{}").calls.empty());
}

TEST(ToolParser, PythonicConvertsLiteralsToJson) {
    ParsedToolCalls p = parse_both_ways(
        ToolCallFormat::kPythonic,
        "[get_weather(city='Paris', days=3), log(flag=True, none=None, xs=[1, 2.5, \"a\\\"b\"], d={'k': False}),"
        " ping()]");
    ASSERT_EQ(p.calls.size(), 3u);
    EXPECT_FALSE(p.content);
    EXPECT_EQ(json::parse(p.calls[0].arguments), json({{"city", "Paris"}, {"days", 3}}));
    EXPECT_EQ(json::parse(p.calls[1].arguments),
              json({{"flag", true}, {"none", nullptr}, {"xs", {1, 2.5, "a\"b"}}, {"d", {{"k", false}}}}));
    EXPECT_EQ(p.calls[2].arguments, "{}");
    ParsedToolCalls text = parse_both_ways(ToolCallFormat::kPythonic, "No calls [here].");
    EXPECT_TRUE(text.calls.empty());
    ParsedToolCalls bad = parse_both_ways(ToolCallFormat::kPythonic, "[f(x=import os)]");
    EXPECT_TRUE(bad.calls.empty());
    EXPECT_EQ(bad.content, "[f(x=import os)]");
    // Held back while it might have been calls, then given as content.
    EXPECT_EQ(parse_both_ways(ToolCallFormat::kPythonic, "[1, 2] is a list").content, "[1, 2] is a list");
}

TEST(ToolParser, JsonArrayIsVllmsRequiredFormat) {
    ParsedToolCalls p = parse_both_ways(ToolCallFormat::kJsonArray,
                                        R"([{"name": "f", "parameters": {"a": 1}}, {"name": "g", "parameters": {}}])");
    ASSERT_EQ(p.calls.size(), 2u);
    EXPECT_EQ(p.calls[0].arguments, R"({"a": 1})");
}

TEST(ToolParser, NamesAndConstrainedFormats) {
    EXPECT_EQ(*tool_call_format("hermes"), ToolCallFormat::kHermes);
    EXPECT_EQ(*tool_call_format("llama3_json"), ToolCallFormat::kLlama3Json);
    EXPECT_EQ(*tool_call_format("mistral"), ToolCallFormat::kMistral);
    EXPECT_EQ(*tool_call_format("pythonic"), ToolCallFormat::kPythonic);
    auto unknown = tool_call_format("granite");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_NE(unknown.status().message().find("granite"), std::string::npos);
    EXPECT_EQ(constrained_tool_format(ToolCallFormat::kHermes)->sequence.begin, "<tool_call>\n");
    EXPECT_STREQ(constrained_tool_format(ToolCallFormat::kLlama3Json)->arguments_key, "parameters");
    EXPECT_FALSE(constrained_tool_format(ToolCallFormat::kPythonic));
}

// ---- reasoning ---------------------------------------------------------------------------------------------------

ParsedReasoning reason_both_ways(ReasoningFormat format, const std::string& text) {
    ParsedReasoning whole = ReasoningParser::parse(format, text);
    for (size_t piece : {1, 2, 5}) {
        ReasoningParser parser(format);
        std::string reasoning, content;
        for (size_t i = 0; i < text.size(); i += piece) parser.feed(text.substr(i, piece), reasoning, content);
        parser.finish(reasoning, content);
        EXPECT_EQ(reasoning, whole.reasoning.value_or("")) << "pieces of " << piece;
        EXPECT_EQ(content, whole.content.value_or("")) << "pieces of " << piece;
    }
    return whole;
}

TEST(ReasoningParser, DeepSeekR1ReasonsUntilTheEndTag) {
    ParsedReasoning p = reason_both_ways(ReasoningFormat::kDeepSeekR1, "Hmm, 2+2 </ is 4.</think>\n\nFour.");
    EXPECT_EQ(p.reasoning, "Hmm, 2+2 </ is 4.");
    EXPECT_EQ(p.content, "\n\nFour.");
    ParsedReasoning opened = reason_both_ways(ReasoningFormat::kDeepSeekR1, "<think>a</think>b");
    EXPECT_EQ(opened.reasoning, "a");
    EXPECT_EQ(opened.content, "b");
    ParsedReasoning unended = reason_both_ways(ReasoningFormat::kDeepSeekR1, "still thinking");
    EXPECT_EQ(unended.reasoning, "still thinking");
    EXPECT_FALSE(unended.content);
}

TEST(ReasoningParser, Qwen3ReasonsOnlyInAThinkBlock) {
    ParsedReasoning p = reason_both_ways(ReasoningFormat::kQwen3, "<think>\nplan\n</think>\n\nanswer");
    EXPECT_EQ(p.reasoning, "\nplan\n");
    EXPECT_EQ(p.content, "\n\nanswer");
    ParsedReasoning plain = reason_both_ways(ReasoningFormat::kQwen3, "no <think> here");
    EXPECT_FALSE(plain.reasoning);
    EXPECT_EQ(plain.content, "no <think> here");
    EXPECT_TRUE(prompt_closes_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    EXPECT_FALSE(prompt_closes_reasoning("<|im_start|>assistant\n<think>\n"));
}

TEST(ChatOutput, ReasoningThenToolCallsAndFinishReasons) {
    ChatOutputOptions options;
    options.reasoning = ReasoningFormat::kQwen3;
    options.tool_choice = ToolChoice::kAuto;
    options.tool_format = ToolCallFormat::kHermes;
    const std::string text =
        "<think>call it</think>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
        "{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
    ChatMessageParts parts = parse_chat_output(options, text);
    EXPECT_EQ(parts.reasoning, "call it");
    EXPECT_EQ(parts.content, "\n");
    ASSERT_EQ(parts.tool_calls.size(), 2u);
    EXPECT_EQ(chat_finish_reason(options, true, "stop"), "tool_calls");
    options.parallel_tool_calls = false;
    EXPECT_EQ(parse_chat_output(options, text).tool_calls.size(), 1u);
    ChatStreamParser stream(options);
    std::vector<ToolCallDelta> calls;
    std::string reasoning;
    for (size_t i = 0; i < text.size(); ++i) {
        ChatStreamParser::Delta d = stream.feed(text.substr(i, 1), i + 1 == text.size());
        reasoning += d.reasoning;
        calls.insert(calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    }
    EXPECT_EQ(reasoning, "call it");
    for (const ToolCallDelta& d : calls) EXPECT_EQ(d.index, 0);
    EXPECT_TRUE(stream.called_tools());
    // A named function without a parser format: the whole answer is its arguments (vLLM), finish reason "stop".
    ChatOutputOptions named;
    named.tool_choice = ToolChoice::kNamed;
    named.named_arguments = true;
    named.named_function = "f";
    ChatMessageParts n = parse_chat_output(named, R"({"a": 1})");
    ASSERT_EQ(n.tool_calls.size(), 1u);
    EXPECT_EQ(n.tool_calls[0].name, "f");
    EXPECT_EQ(n.tool_calls[0].arguments, R"({"a": 1})");
    EXPECT_EQ(n.content, "");
    EXPECT_EQ(chat_finish_reason(named, true, "stop"), "stop");
}

}  // namespace
}  // namespace taco::server
