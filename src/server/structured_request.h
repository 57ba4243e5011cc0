// The structured-output fields of a request, in every spelling clients send them: OpenAI's response_format
// (text, json_object, json_schema with strict), vLLM's guided_json / guided_regex / guided_choice / guided_grammar /
// guided_whitespace_pattern / guided_decoding_backend, and the newer structured_outputs object (json, regex,
// choice, grammar, json_object, whitespace_pattern, disable_any_whitespace, disable_additional_properties,
// disable_fallback). At most one constraint per request; each accepted field is honoured, the rest are 400s naming
// them (structural_tag, an unknown backend, ...).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "server/openai_request.h"
#include "structured/structured_output.h"

namespace taco::server {

// `serve --structured-outputs-config JSON` (and --guided-decoding-backend): the server-wide defaults.
struct StructuredOutputsConfig {
    std::string backend = "auto";                // any of vLLM's names; every one runs this engine's own matcher
    bool disable_any_whitespace = false;         // JSON without whitespace between tokens
    bool disable_additional_properties = false;  // JSON objects admit no properties their schema does not name

    // Errors name the unknown key or bad value.
    static Result<StructuredOutputsConfig> from_json_text(const std::string& text);
    static Status check_backend(const std::string& name);
};

struct StructuredRequest {
    structured::StructuredOutputSpec spec;
    std::string param;  // the field it came from, for errors ("response_format", "guided_json", ...)
};

// The constraint the request asks for, or nullopt (none, or response_format "text"). False with `error` set on a
// bad field. ordered_body: the same body with its keys in the request's order (a schema's properties are generated in
// that order), or null (then in sorted order).
bool read_structured_output(const nlohmann::json& body, const StructuredOutputsConfig& config,
                            std::optional<StructuredRequest>& out, ApiError& error,
                            const nlohmann::ordered_json* ordered_body = nullptr);

}  // namespace taco::server
