// ReasoningParser: vLLM's --reasoning-parser, a reasoning model's output split into reasoning_content (the text
// between <think> and </think>) and content (the answer after it), whole or as it streams.
//   deepseek_r1  the output is reasoning until </think> (the template opens <think> in the prompt; a leading <think>
//                in the output is dropped); no </think>: all of it is reasoning.
//   qwen3        reasoning only when the output opens with <think> (Qwen3's enable_thinking=false renders an empty
//                think block into the prompt instead, and the output is all content).
// Structured output applies to the content: SamplingParams::grammar_after is "</think>" unless the prompt already
// closed the think block.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace taco::server {

enum class ReasoningFormat { kDeepSeekR1, kQwen3 };

inline constexpr std::string_view kThinkBegin = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";

// "deepseek_r1", "qwen3"; errors list them.
Result<ReasoningFormat> reasoning_format(std::string_view name);

// Whether the rendered prompt leaves the model past its thinking: it ends with </think> (and whitespace).
bool prompt_closes_reasoning(std::string_view prompt);

struct ParsedReasoning {
    std::optional<std::string> reasoning;
    std::optional<std::string> content;
};

class ReasoningParser {
public:
    explicit ReasoningParser(ReasoningFormat format) : format_(format) {}

    static ParsedReasoning parse(ReasoningFormat format, std::string_view text);

    // Streaming: appends what the next piece of output adds to each part; text that may be a partial tag is held
    // back until known.
    void feed(std::string_view delta, std::string& reasoning, std::string& content);
    void finish(std::string& reasoning, std::string& content);

private:
    enum class Phase { kOpening, kReasoning, kContent };
    void run(bool final, std::string& reasoning, std::string& content);

    ReasoningFormat format_;
    Phase phase_ = Phase::kOpening;
    std::string pending_;  // text not assigned to a part yet
};

}  // namespace taco::server
