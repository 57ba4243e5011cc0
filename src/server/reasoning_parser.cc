#include "server/reasoning_parser.h"

namespace taco::server {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The longest proper prefix of `tag` that `s` ends with.
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
    for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
        if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
    return 0;
}

}  // namespace

Result<ReasoningFormat> reasoning_format(std::string_view name) {
    if (name == "deepseek_r1") return ReasoningFormat::kDeepSeekR1;
    if (name == "qwen3") return ReasoningFormat::kQwen3;
    return error("--reasoning-parser '{}' is not available here (deepseek_r1, qwen3)", name);
}

bool prompt_closes_reasoning(std::string_view prompt) {
    while (!prompt.empty() && is_ws(prompt.back())) prompt.remove_suffix(1);
    return prompt.size() >= kThinkEnd.size() && prompt.substr(prompt.size() - kThinkEnd.size()) == kThinkEnd;
}

ParsedReasoning ReasoningParser::parse(ReasoningFormat format, std::string_view text) {
    ReasoningParser parser(format);
    std::string reasoning, content;
    parser.feed(text, reasoning, content);
    parser.finish(reasoning, content);
    ParsedReasoning out;
    if (parser.phase_ != Phase::kContent || !reasoning.empty() || text.find(kThinkEnd) != std::string_view::npos)
        out.reasoning = reasoning;
    if (!content.empty()) out.content = content;
    return out;
}

void ReasoningParser::feed(std::string_view delta, std::string& reasoning, std::string& content) {
    pending_.append(delta);
    run(false, reasoning, content);
}

void ReasoningParser::finish(std::string& reasoning, std::string& content) { run(true, reasoning, content); }

void ReasoningParser::run(bool final, std::string& reasoning, std::string& content) {
    if (phase_ == Phase::kOpening) {
        size_t start = 0;
        while (start < pending_.size() && is_ws(pending_[start])) ++start;
        const std::string_view rest = std::string_view(pending_).substr(start);
        if (rest.substr(0, kThinkBegin.size()) == kThinkBegin) {
            pending_.erase(0, start + kThinkBegin.size());
            phase_ = Phase::kReasoning;
        } else if (!final && kThinkBegin.substr(0, rest.size()) == rest) {
            return;  // blank or a partial <think>: undecided
        } else {
            phase_ = format_ == ReasoningFormat::kDeepSeekR1 ? Phase::kReasoning : Phase::kContent;
        }
    }
    if (phase_ == Phase::kReasoning) {
        const size_t end = pending_.find(kThinkEnd);
        if (end == std::string::npos) {
            const size_t keep = final ? 0 : partial_tag_suffix(pending_, kThinkEnd);
            reasoning.append(pending_, 0, pending_.size() - keep);
            pending_.erase(0, pending_.size() - keep);
            return;
        }
        reasoning.append(pending_, 0, end);
        pending_.erase(0, end + kThinkEnd.size());
        phase_ = Phase::kContent;
    }
    content += pending_;
    pending_.clear();
}

}  // namespace taco::server
