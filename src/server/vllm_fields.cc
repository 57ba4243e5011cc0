#include "server/vllm_fields.h"

#include <fmt/format.h>

namespace taco::server {
namespace {

using json = nlohmann::json;

// null, false, 0, "" and empty arrays / objects: what a client sends for "not used".
bool neutral(const json& value) {
    if (value.is_null()) return true;
    if (value.is_boolean()) return !value.get<bool>();
    if (value.is_number()) return value.get<double>() == 0.0;
    if (value.is_string()) return value.get<std::string>().empty();
    if (value.is_array() || value.is_object()) return value.empty();
    return false;
}

struct Field {
    const char* name;
    const char* what;  // completes "'<name>' (<what>) is not supported yet"
    bool chat_only;
};

// vLLM's sampling and serving extras that change the output, in the order of its protocol definitions.
constexpr Field kFields[] = {
    {"use_beam_search", "beam search", false},
    {"length_penalty", "beam search's length penalty", false},
    {"bad_words", "banned word sequences", false},
    {"allowed_token_ids", "a whitelist of token ids", false},
    {"truncate_prompt_tokens", "keeping only the last N prompt tokens", false},
    {"return_tokens_as_token_ids", "'token_id:N' strings in logprobs", false},
    {"logits_processors", "custom logits processors", false},
    {"priority", "request priority (the scheduler is first come, first served)", false},
    {"continue_final_message", "continuing the last assistant message", true},
    {"chat_template", "a per-request chat template", true},
    {"reasoning_effort", "reasoning effort, which no model served here reads", true},
};

}  // namespace

std::optional<UnimplementedField> unimplemented_vllm_field(const json& body, bool chat) {
    if (!body.is_object()) return std::nullopt;
    for (const Field& f : kFields) {
        if (f.chat_only && !chat) continue;
        const auto it = body.find(f.name);
        if (it == body.end() || neutral(*it)) continue;
        // length_penalty 1.0 is vLLM's default (no penalty).
        if (std::string_view(f.name) == "length_penalty" && it->is_number() && it->get<double>() == 1.0) continue;
        return UnimplementedField{f.name, fmt::format("'{}' ({}) is not supported yet", f.name, f.what)};
    }
    return std::nullopt;
}

}  // namespace taco::server
