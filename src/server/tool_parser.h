// ToolParser: vLLM's --tool-call-parser, the model's text split into content and tool calls, whole (parse) or as it
// streams (feed / finish), in the shapes of vLLM's serving_chat. Formats:
//   hermes       Qwen2.5 / Qwen3 / Hermes: content, then <tool_call>{"name": ..., "arguments": {...}}</tool_call> ...
//   llama3_json  Llama 3.1 / 3.2: [<|python_tag|>]{"name": ..., "parameters": {...}}[; {...}] (the whole output)
//   mistral      Mistral / NeMo: content, then [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (tokenizers
//                before v11) or [TOOL_CALLS]name[ARGS]{...} per call (v11 on: Mistral Small 3.2, Magistral)
//   pythonic     Llama 3.2 / 4 pythonic: [name(key=value, ...), ...] (the whole output; Python literals)
//   json_array   no parser: tool_choice "required" as vLLM constrains it, [{"name": ..., "parameters": {...}}, ...]
// A call's `arguments` is the JSON text of its arguments as the model wrote it (pythonic: converted to JSON), so the
// streamed fragments of a call join into exactly the string the whole-text parse gives. Output that does not parse as
// calls is content, as vLLM returns it; streamed, a call whose name went out stays a call even if its arguments then
// break (the whole-text parse gives that output as content).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "structured/json_schema_grammar.h"

namespace taco::server {

enum class ToolCallFormat { kHermes, kLlama3Json, kMistral, kPythonic, kJsonArray };

struct ToolCall {
    std::string id;  // "chatcmpl-tool-<32 hex>" (mistral: 9 letters and digits, as its templates require)
    std::string name;
    std::string arguments;  // JSON text
};

// One piece of a streamed call, as vLLM's DeltaToolCall: the first of a call has id and name (type "function").
struct ToolCallDelta {
    int64_t index = 0;
    std::optional<std::string> id;
    std::optional<std::string> name;
    std::string arguments;  // the next fragment of the arguments' JSON text
};

struct ParsedToolCalls {
    std::optional<std::string> content;  // null when the text is only calls
    std::vector<ToolCall> calls;
};

// The --tool-call-parser names ("hermes", "llama3_json" (= "llama"), "mistral", "pythonic"); errors list them.
Result<ToolCallFormat> tool_call_format(std::string_view name);
const char* tool_call_format_name(ToolCallFormat format);
std::string new_tool_call_id(ToolCallFormat format);

// The format a constrained request (tool_choice "required" or a named function) is written in: the parser's own
// tags around JSON values, or nullopt where the format is not JSON (pythonic), which then uses vLLM's json_array.
// arguments_key: "arguments" or "parameters" (llama3_json, json_array).
struct ConstrainedToolFormat {
    structured::JsonSequenceFormat sequence;
    const char* arguments_key;
};
std::optional<ConstrainedToolFormat> constrained_tool_format(ToolCallFormat format);

class ToolParser {
public:
    explicit ToolParser(ToolCallFormat format) : format_(format) {}

    // The whole output at once.
    static ParsedToolCalls parse(ToolCallFormat format, std::string_view text);

    // Streaming: the next piece of the output; appends the content that may be shown now and the call deltas. Text
    // that may still turn into a call (a partial "<tool_call>") is held back until it is known.
    void feed(std::string_view delta, std::string& content, std::vector<ToolCallDelta>& calls);
    // The end of the output: what was held back.
    void finish(std::string& content, std::vector<ToolCallDelta>& calls);
    int64_t num_calls() const { return int64_t(sent_.size()); }

private:
    struct Sent {
        bool named = false;
        size_t arguments = 0;  // bytes of the arguments sent
    };
    void emit(bool final, std::string& content, std::vector<ToolCallDelta>& calls);

    ToolCallFormat format_;
    std::string text_;
    size_t content_sent_ = 0;
    bool content_done_ = false;  // the calls began: no more content
    std::vector<Sent> sent_;
};

}  // namespace taco::server
