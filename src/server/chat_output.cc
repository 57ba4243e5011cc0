#include "server/chat_output.h"

namespace taco::server {

ChatMessageParts parse_chat_output(const ChatOutputOptions& options, std::string_view text) {
    ChatMessageParts out;
    std::optional<std::string> answer = std::string(text);
    if (options.reasoning) {
        ParsedReasoning parsed = ReasoningParser::parse(*options.reasoning, text);
        if (options.include_reasoning) out.reasoning = std::move(parsed.reasoning);
        answer = std::move(parsed.content);
    }
    if (options.named_arguments) {
        // vLLM's named tool choice without a parser format: the answer is the arguments, the content "".
        out.tool_calls.push_back(
            {new_tool_call_id(ToolCallFormat::kJsonArray), options.named_function, answer.value_or("")});
        out.content = "";
        return out;
    }
    if (options.tool_format && answer) {
        ParsedToolCalls parsed = ToolParser::parse(*options.tool_format, *answer);
        if (!options.parallel_tool_calls && parsed.calls.size() > 1) parsed.calls.resize(1);
        out.tool_calls = std::move(parsed.calls);
        answer = std::move(parsed.content);
    }
    out.content = std::move(answer);
    return out;
}

std::string chat_finish_reason(const ChatOutputOptions& options, bool called_tools, const std::string& engine_reason) {
    if (called_tools && (options.tool_choice == ToolChoice::kAuto || options.tool_choice == ToolChoice::kRequired))
        return "tool_calls";
    return engine_reason;
}

ChatStreamParser::ChatStreamParser(const ChatOutputOptions& options) : options_(options) {
    if (options.reasoning) reasoning_.emplace(*options.reasoning);
    if (options.tool_format && !options.named_arguments) tools_.emplace(*options.tool_format);
}

ChatStreamParser::Delta ChatStreamParser::feed(std::string_view text, bool final) {
    Delta out;
    std::string answer;
    if (reasoning_) {
        reasoning_->feed(text, out.reasoning, answer);
        if (final) reasoning_->finish(out.reasoning, answer);
        if (!options_.include_reasoning) out.reasoning.clear();
    } else {
        answer = text;
    }
    if (options_.named_arguments) {
        if (!called_ && (!answer.empty() || final)) {
            ToolCallDelta first;
            first.id = new_tool_call_id(ToolCallFormat::kJsonArray);
            first.name = options_.named_function;
            out.tool_calls.push_back(std::move(first));
            called_ = true;
        }
        if (!answer.empty()) out.tool_calls.push_back(ToolCallDelta{0, std::nullopt, std::nullopt, answer});
        return out;
    }
    if (!tools_) {
        out.content = std::move(answer);
        return out;
    }
    tools_->feed(answer, out.content, out.tool_calls);
    if (final) tools_->finish(out.content, out.tool_calls);
    if (!options_.parallel_tool_calls)
        std::erase_if(out.tool_calls, [](const ToolCallDelta& d) { return d.index > 0; });
    called_ = called_ || tools_->num_calls() > 0;
    return out;
}

}  // namespace taco::server
