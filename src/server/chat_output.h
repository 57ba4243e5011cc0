// What a chat reply's text becomes: reasoning_content (a --reasoning-parser), content and tool_calls (a
// --tool-call-parser, or the format a tool_choice constrained it to), whole or per streamed delta, in vLLM's shapes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

namespace taco::server {

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ChatOutputOptions {
    std::optional<ReasoningFormat> reasoning;  // --reasoning-parser
    bool include_reasoning = true;             // vLLM's include_reasoning: false drops reasoning_content
    ToolChoice tool_choice = ToolChoice::kNone;
    std::optional<ToolCallFormat> tool_format;  // the answer is parsed into tool_calls in this format; null: not
    // tool_choice names a function and no parser format wraps it: the whole answer is that call's arguments (vLLM).
    bool named_arguments = false;
    std::string named_function;
    bool parallel_tool_calls = true;  // false: the first call only
};

struct ChatMessageParts {
    std::optional<std::string> reasoning;
    std::optional<std::string> content;
    std::vector<ToolCall> tool_calls;
};

ChatMessageParts parse_chat_output(const ChatOutputOptions& options, std::string_view text);

// "tool_calls" when the answer called tools under tool_choice auto or required (as vLLM; a named function keeps
// "stop", as OpenAI), else the engine's reason.
std::string chat_finish_reason(const ChatOutputOptions& options, bool called_tools, const std::string& engine_reason);

// One choice's streamed text, split as it arrives.
class ChatStreamParser {
public:
    explicit ChatStreamParser(const ChatOutputOptions& options);

    struct Delta {
        std::string reasoning;
        std::string content;
        std::vector<ToolCallDelta> tool_calls;
    };
    // `final`: the text ends with this piece; what was held back comes out.
    Delta feed(std::string_view text, bool final);
    bool called_tools() const { return called_; }

private:
    const ChatOutputOptions& options_;
    std::optional<ReasoningParser> reasoning_;
    std::optional<ToolParser> tools_;
    bool called_ = false;
};

}  // namespace taco::server
