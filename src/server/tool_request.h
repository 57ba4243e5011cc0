// The tool fields of a chat request: tools, tool_choice (none, auto, required, a named function) and
// parallel_tool_calls, read as vLLM reads them. They give the template its tools, say how the reply is parsed
// (ChatOutputOptions), and for "required" or a named function the constraint that makes every call valid JSON for
// its tool's parameters: the --tool-call-parser's own format around the schemas (hermes, llama3_json, mistral), or
// vLLM's JSON (a list of {name, parameters}, or a named function's arguments alone) without one.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/chat_output.h"
#include "server/openai_request.h"
#include "structured/structured_output.h"

namespace taco::server {

// `serve --enable-auto-tool-choice --tool-call-parser NAME --reasoning-parser NAME
// --exclude-tools-when-tool-choice-none`.
struct ToolServerOptions {
    bool enable_auto_tool_choice = false;
    std::optional<ToolCallFormat> tool_call_parser;
    std::optional<ReasoningFormat> reasoning_parser;
    bool exclude_tools_when_tool_choice_none = false;  // vLLM's flag: tool_choice "none" renders no tools
};

struct ToolRequest {
    nlohmann::ordered_json template_tools;  // null or the tools as sent, for the chat template
    ChatOutputOptions output;
    std::optional<structured::StructuredOutputSpec> constraint;  // required / named: the calls' grammar
};

// False with `error` naming the field on a bad or unsupported value. ordered_body: the body with its keys in the
// request's order (a schema's properties are generated in that order), or null.
bool read_tool_request(const nlohmann::json& body, const nlohmann::ordered_json* ordered_body,
                       const ToolServerOptions& options, ToolRequest& out, ApiError& error);

}  // namespace taco::server
