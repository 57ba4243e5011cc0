// JSON parsing and quoting for untrusted text: every parse goes through parse_json (nesting limited to
// limits::kMaxJsonDepth before nlohmann sees the text, numbers beyond double range reported, never thrown), and
// every error message that quotes a value uses json_excerpt (bounded in length and depth).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "core/status.h"

namespace taco {

// Fails when '[' / '{' nest deeper than max_depth outside strings; the error names the limit and the byte offset.
Status check_json_depth(std::string_view text, int max_depth = limits::kMaxJsonDepth);

// Errors read "invalid JSON: <parser message>" or "JSON nested deeper than 128 levels (at byte N)".
Result<nlohmann::json> parse_json(std::string_view text);
Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text);

// A compact rendering of `value` for error messages: containers deeper than limits::kMaxJsonExcerptDepth show as
// [...] / {...}, the whole is cut at max_chars (with "..."), invalid UTF-8 is replaced. Never recurses deeper
// than the depth limit, whatever the value.
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = limits::kMaxJsonExcerptChars);
std::string json_excerpt(const nlohmann::ordered_json& value, size_t max_chars = limits::kMaxJsonExcerptChars);

}  // namespace taco
