// ChatTemplate: a model's chat template (Jinja) rendered exactly as transformers' apply_chat_template(...,
// tokenize=False) renders it: the template sees messages, tools, documents (None), add_generation_prompt, the
// special tokens (bos_token, eos_token, ... as in tokenizer.special_tokens_map) and the chat-template kwargs,
// which override everything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/jinja/template.h"

namespace taco {

struct ChatTemplateInputs {
    nlohmann::ordered_json messages;   // array of {role, content: string | [parts]} (tool_calls etc. passed through)
    nlohmann::ordered_json tools;      // null or array
    nlohmann::ordered_json documents;  // null or array (RAG templates' `documents`)
    bool add_generation_prompt = false;
    std::optional<std::string> date_string;  // for templates that read `date_string`
    nlohmann::ordered_json extra;            // object: chat_template_kwargs, e.g. {"enable_thinking": false}
    // The clock of strftime_now() (epoch seconds, local time); unset = the current time. Goldens pin it.
    std::optional<int64_t> now_epoch_seconds;
};

class ChatTemplate {
public:
    // Empty bos/eos tokens are left undefined in the template, as transformers leaves unset special tokens out.
    static Result<ChatTemplate> from_string(std::string source, std::string bos_token = "", std::string eos_token = "");
    // DIR/chat_template.jinja if present (it takes precedence, as in transformers 5.x), else tokenizer_config.json's
    // "chat_template": a string, or a list of {name, template} of which "default" is used, or "tool_use" when tools
    // are given (transformers' get_chat_template). Special tokens come from tokenizer_config.json (a string or
    // {"content": ...}).
    static Result<ChatTemplate> from_dir(const std::string& dir);

    // Like apply_chat_template, an empty conversation is an error.
    Result<std::string> render(const ChatTemplateInputs& inputs) const;

    // The default template's source ("" when the config names only a "tool_use" template).
    const std::string& source() const { return source_; }
    // (name, token) pairs given to the template, e.g. {"bos_token", "<s>"}.
    const std::vector<std::pair<std::string, std::string>>& special_tokens() const { return special_tokens_; }

private:
    ChatTemplate() = default;

    std::string source_;
    std::optional<jinja::Template> default_;
    std::optional<jinja::Template> tool_use_;
    std::vector<std::pair<std::string, std::string>> special_tokens_;
};

}  // namespace taco
