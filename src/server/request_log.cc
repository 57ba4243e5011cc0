#include "server/request_log.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace taco::server {
namespace {

// The bytes of the first `max_chars` UTF-8 characters (code points, as Python's len) of `text`.
size_t utf8_prefix_bytes(const std::string& text, int64_t max_chars) {
    int64_t chars = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if ((uint8_t(text[i]) & 0xC0) == 0x80) continue;  // a continuation byte
        if (chars++ == max_chars) return i;
    }
    return text.size();
}

}  // namespace

std::string describe_prompt(const GenerationInput& input, std::optional<int64_t> max_log_len) {
    const int64_t limit = max_log_len.value_or(-1);
    if (input.prompt) {
        const std::string& text = *input.prompt;
        const size_t bytes = limit >= 0 ? utf8_prefix_bytes(text, limit) : text.size();
        const nlohmann::json shown = text.substr(0, bytes);
        return fmt::format("prompt: {}{}", shown.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                           bytes < text.size() ? "..." : "");
    }
    const std::vector<int32_t>& ids = input.prompt_ids;
    const size_t count = limit >= 0 ? std::min(ids.size(), size_t(limit)) : ids.size();
    std::string list;
    for (size_t i = 0; i < count; ++i) list += fmt::format("{}{}", i ? ", " : "", ids[i]);
    return fmt::format("prompt_token_ids: [{}{}]", list, count < ids.size() ? (count ? ", ..." : "...") : "");
}

}  // namespace taco::server
