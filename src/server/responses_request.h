// OpenAI's Responses API (POST /v1/responses), text in and text out: the request is read into the chat request it
// means (input and instructions as messages, max_output_tokens as max_tokens, reasoning.effort as
// reasoning_effort), which parse_chat_request then checks like any other. What this server does not do (built-in or
// function tools, stored responses, previous_response_id, non-text formats, include) is a 400 naming the field.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace taco::server {

// The echo of the request that every Response object carries (instructions, max_output_tokens, temperature, ...).
struct ResponsesEcho {
    nlohmann::json instructions;        // string or null
    nlohmann::json max_output_tokens;   // integer or null
    nlohmann::json temperature, top_p;  // numbers or null
    nlohmann::json metadata;            // object (default {})
    nlohmann::json user;                // string or null
};

// The chat completion body equivalent to a Responses request, or nullopt with `error` set (status 400, `param` the
// Responses field).
std::optional<nlohmann::json> responses_to_chat(const nlohmann::json& body, ResponsesEcho& echo, ApiError& error);

}  // namespace taco::server
