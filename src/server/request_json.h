// The JSON body of an API request, parsed with errors a client can act on: a syntax error says where, and a number
// beyond the range of a double (which nlohmann reports as an out_of_range exception, once a 500) is a 400 naming
// the field that holds it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace taco::server {

// nullopt with `error` set (status 400, `param` the field's path such as "logit_bias.50256" or "prompt[2]") when the
// body is not valid JSON.
std::optional<nlohmann::json> parse_request_json(const std::string& body, ApiError& error);

}  // namespace taco::server
