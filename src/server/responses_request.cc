#include "server/responses_request.h"

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

bool present(const json& body, const char* key) { return body.contains(key) && !body.at(key).is_null(); }

std::optional<json> refuse(ApiError& error, std::string message, std::string param) {
    error = ApiError{400, std::move(message), std::move(param), "BadRequestError"};
    return std::nullopt;
}

// One input message's content as chat content: a string, or its input_text / output_text parts joined.
std::optional<json> message_content(const json& content, const std::string& where, ApiError& error) {
    if (content.is_string()) return content;
    if (!content.is_array())
        return refuse(error, fmt::format("{}.content must be a string or a list of parts", where), "input");
    json parts = json::array();
    for (const json& part : content) {
        const std::string type = part.is_object() ? part.value("type", "") : "";
        if ((type != "input_text" && type != "output_text") || !part.contains("text") || !part.at("text").is_string())
            return refuse(error,
                          fmt::format("{}.content: only input_text and output_text parts are supported, got {}", where,
                                      json_excerpt(part)),
                          "input");
        parts.push_back({{"type", "text"}, {"text", part.at("text")}});
    }
    return parts;
}

}  // namespace

std::optional<json> responses_to_chat(const json& body, ResponsesEcho& echo, ApiError& error) {
    if (!body.is_object()) return refuse(error, "the request body must be a JSON object", "");
    // What a text-only server without storage cannot do.
    if (present(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty()))
        return refuse(error,
                      "'tools' is not supported on /v1/responses (no built-in or function tools); use "
                      "/v1/chat/completions for function calling",
                      "tools");
    if (present(body, "previous_response_id"))
        return refuse(error,
                      "'previous_response_id' is not supported: this server stores no responses; send the "
                      "conversation in 'input'",
                      "previous_response_id");
    if (present(body, "store") && body.at("store") == true)
        return refuse(error,
                      "'store': true is not supported: this server stores no responses; send false or leave "
                      "it out",
                      "store");
    if (present(body, "background") && body.at("background") == true)
        return refuse(error, "'background': true is not supported", "background");
    if (present(body, "include") && !(body.at("include").is_array() && body.at("include").empty()))
        return refuse(error, "'include' is not supported", "include");
    if (present(body, "conversation")) return refuse(error, "'conversation' is not supported", "conversation");
    if (present(body, "truncation") && body.at("truncation") != "disabled")
        return refuse(error, "'truncation' must be \"disabled\" (the only mode supported)", "truncation");
    if (present(body, "text")) {
        const json& text = body.at("text");
        if (!text.is_object() || (present(text, "format") && text.at("format").value("type", "") != "text"))
            return refuse(error, "'text.format' must be {\"type\": \"text\"} (the only format supported)", "text");
    }
    for (const char* key : {"tool_choice"})
        if (present(body, key) && body.at(key) != "auto" && body.at(key) != "none")
            return refuse(error, fmt::format("'{}' must be \"auto\" or \"none\" without tools", key), key);

    json chat = json::object();
    json messages = json::array();
    if (present(body, "instructions")) {
        if (!body.at("instructions").is_string())
            return refuse(error, "'instructions' must be a string", "instructions");
        messages.push_back({{"role", "system"}, {"content", body.at("instructions")}});
    }
    if (!present(body, "input")) return refuse(error, "'input' is required", "input");
    const json& input = body.at("input");
    if (input.is_string()) {
        messages.push_back({{"role", "user"}, {"content", input}});
    } else if (input.is_array() && !input.empty()) {
        for (size_t i = 0; i < input.size(); ++i) {
            const json& item = input.at(i);
            const std::string where = fmt::format("input[{}]", i);
            if (!item.is_object() || item.value("type", "message") != "message" || !item.contains("role") ||
                !item.at("role").is_string())
                return refuse(error,
                              fmt::format("{} must be a message {{\"role\", \"content\"}}; other item types are not "
                                          "supported",
                                          where),
                              "input");
            const std::string role = item.at("role");
            if (role != "user" && role != "assistant" && role != "system" && role != "developer")
                return refuse(error, fmt::format("{}.role must be user, assistant, system or developer", where),
                              "input");
            auto content = message_content(item.value("content", json("")), where, error);
            if (!content) return std::nullopt;
            messages.push_back({{"role", role == "developer" ? "system" : role}, {"content", *content}});
        }
    } else {
        return refuse(error, "'input' must be a string or a non-empty list of messages", "input");
    }
    chat["messages"] = std::move(messages);
    if (present(body, "max_output_tokens")) chat["max_tokens"] = body.at("max_output_tokens");
    if (present(body, "reasoning")) {
        const json& reasoning = body.at("reasoning");
        if (!reasoning.is_object()) return refuse(error, "'reasoning' must be an object", "reasoning");
        if (present(reasoning, "effort")) chat["reasoning_effort"] = reasoning.at("effort");
    }
    // Fields with the same name and meaning in chat completions.
    for (const char* key :
         {"model", "temperature", "top_p", "top_k", "min_p", "seed", "stream", "user", "repetition_penalty",
          "presence_penalty", "frequency_penalty", "stop", "priority", "chat_template_kwargs"})
        if (present(body, key)) chat[key] = body.at(key);
    echo.instructions = body.value("instructions", json(nullptr));
    echo.max_output_tokens = body.value("max_output_tokens", json(nullptr));
    echo.temperature = body.value("temperature", json(nullptr));
    echo.top_p = body.value("top_p", json(nullptr));
    echo.metadata = present(body, "metadata") ? body.at("metadata") : json::object();
    echo.user = body.value("user", json(nullptr));
    return chat;
}

}  // namespace taco::server
