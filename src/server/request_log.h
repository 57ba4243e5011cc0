// What the request log says of a prompt (--enable-log-requests), cut to vLLM's --max-log-len: the first
// max_log_len characters of a text prompt, the first max_log_len ids of a token prompt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace taco::server {

// `prompt: "..."` (JSON-quoted, so control characters and invalid UTF-8 stay on one line) or
// `prompt_token_ids: [...]`; "..." at the end tells what was cut. No limit: the whole prompt.
std::string describe_prompt(const GenerationInput& input, std::optional<int64_t> max_log_len);

}  // namespace taco::server
