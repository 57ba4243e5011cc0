#include "server/structured_request.h"

#include <array>

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using structured::StructuredKind;
using structured::StructuredOutputSpec;

constexpr std::array<const char*, 6> kBackends = {"auto",     "xgrammar",           "guidance",
                                                  "outlines", "lm-format-enforcer", "taco"};

bool fail(ApiError& error, std::string message, std::string param) {
    error = ApiError{400, std::move(message), std::move(param), "BadRequestError"};
    return false;
}

bool present(const json& body, const char* key) { return body.contains(key) && !body.at(key).is_null(); }

// The member `key` of an ordered object, or null.
const ojson* child(const ojson* object, const char* key) {
    return object && object->is_object() && object->contains(key) ? &object->at(key) : nullptr;
}

// A schema given as an object or as its JSON text (guided_json takes both). `ordered`: the same value with its keys
// in the request's order (properties are generated in it), when the caller has it.
bool read_schema(const json& value, const std::string& param, StructuredOutputSpec& spec, ApiError& error,
                 const ojson* ordered) {
    if (value.is_string()) {
        // The text is parsed like a request body (nesting limited before any recursive walk, such as dump()).
        auto parsed = parse_ordered_json(value.get<std::string>());
        if (!parsed) {
            std::string_view message = parsed.status().message();
            const bool syntax = message.rfind("invalid JSON: ", 0) == 0;
            if (syntax) message.remove_prefix(std::string_view("invalid JSON: ").size());
            return fail(error, fmt::format("'{}' {}: {}", param, syntax ? "is not valid JSON" : "is refused", message),
                        param);
        }
        spec.text = parsed->dump();
    } else if (value.is_object() || value.is_boolean()) {
        spec.text = ordered && ordered->type() == ojson(value).type() ? ordered->dump() : value.dump();
    } else {
        return fail(error, fmt::format("'{}' must be a JSON schema (an object or its JSON text)", param), param);
    }
    spec.kind = StructuredKind::kJsonSchema;
    return true;
}

bool read_string(const json& value, const std::string& param, std::string& out, ApiError& error) {
    if (!value.is_string()) return fail(error, fmt::format("'{}' must be a string", param), param);
    out = value.get<std::string>();
    return true;
}

bool read_choices(const json& value, const std::string& param, StructuredOutputSpec& spec, ApiError& error) {
    if (!value.is_array() || value.empty())
        return fail(error, fmt::format("'{}' must be a non-empty list of strings", param), param);
    for (const json& c : value) {
        if (!c.is_string()) return fail(error, fmt::format("'{}' must be a non-empty list of strings", param), param);
        spec.choices.push_back(c.get<std::string>());
    }
    spec.kind = StructuredKind::kChoice;
    return true;
}

// One more constraint found under `param`: refused when the request already has one.
bool claim(std::optional<std::string>& source, const std::string& param, ApiError& error) {
    if (source)
        return fail(error,
                    fmt::format("'{}' and '{}' both constrain the output; a request may use only one", *source, param),
                    param);
    source = param;
    return true;
}

bool read_response_format(const json& format, const ojson* ordered, std::optional<std::string>& source,
                          StructuredOutputSpec& spec, ApiError& error) {
    if (!format.is_object() || !format.contains("type") || !format.at("type").is_string())
        return fail(error, "'response_format' must be an object with a string 'type'", "response_format");
    const std::string type = format.at("type").get<std::string>();
    if (type == "text") return true;
    if (type == "json_object") {
        if (!claim(source, "response_format", error)) return false;
        spec.kind = StructuredKind::kJsonObject;
        return true;
    }
    if (type == "json_schema") {
        if (!present(format, "json_schema") || !format.at("json_schema").is_object())
            return fail(error, "response_format type 'json_schema' needs a 'json_schema' object", "response_format");
        const json& js = format.at("json_schema");
        for (const auto& [key, value] : js.items())
            if (key != "name" && key != "schema" && key != "strict" && key != "description")
                return fail(error, fmt::format("response_format.json_schema.{} is not supported", key),
                            "response_format");
        if (!present(js, "schema"))
            return fail(error, "response_format.json_schema needs a 'schema'", "response_format");
        // strict true or false: the output follows the schema either way (a stronger promise than strict false).
        if (present(js, "strict") && !js.at("strict").is_boolean())
            return fail(error, "response_format.json_schema.strict must be true or false", "response_format");
        if (!claim(source, "response_format", error)) return false;
        return read_schema(js.at("schema"), "response_format", spec, error,
                           child(child(ordered, "json_schema"), "schema"));
    }
    return fail(error, fmt::format("response_format type '{}' is not supported (text, json_object, json_schema)", type),
                "response_format");
}

bool read_structured_outputs_object(const json& so, const ojson* ordered, std::optional<std::string>& source,
                                    StructuredOutputSpec& spec, bool& no_whitespace, ApiError& error) {
    if (!so.is_object()) return fail(error, "'structured_outputs' must be an object", "structured_outputs");
    for (const auto& [key, value] : so.items()) {
        if (value.is_null()) continue;
        const std::string param = "structured_outputs." + key;
        if (key == "json") {
            if (!claim(source, param, error) || !read_schema(value, param, spec, error, child(ordered, "json")))
                return false;
        } else if (key == "regex") {
            if (!claim(source, param, error) || !read_string(value, param, spec.text, error)) return false;
            spec.kind = StructuredKind::kRegex;
        } else if (key == "choice") {
            if (!claim(source, param, error) || !read_choices(value, param, spec, error)) return false;
        } else if (key == "grammar") {
            if (!claim(source, param, error) || !read_string(value, param, spec.text, error)) return false;
            spec.kind = StructuredKind::kGrammar;
        } else if (key == "json_object") {
            if (!value.is_boolean()) return fail(error, fmt::format("'{}' must be true or false", param), param);
            if (value.get<bool>()) {
                if (!claim(source, param, error)) return false;
                spec.kind = StructuredKind::kJsonObject;
            }
        } else if (key == "whitespace_pattern") {
            std::string pattern;
            if (!read_string(value, param, pattern, error)) return false;
            spec.whitespace_pattern = pattern;
        } else if (key == "disable_any_whitespace" || key == "disable_additional_properties" ||
                   key == "disable_fallback") {
            if (!value.is_boolean()) return fail(error, fmt::format("'{}' must be true or false", param), param);
            if (key == "disable_any_whitespace") no_whitespace = value.get<bool>();
            if (key == "disable_additional_properties") spec.no_additional_properties = value.get<bool>();
            // disable_fallback: there is no fallback backend to disable.
        } else {
            return fail(error, fmt::format("'{}' is not supported", param), "structured_outputs");
        }
    }
    return true;
}

}  // namespace

Status StructuredOutputsConfig::check_backend(const std::string& name) {
    for (const char* b : kBackends)
        if (name == b) return Status::ok();
    return error("structured-output backend '{}' is unknown (auto, xgrammar, guidance, outlines, lm-format-enforcer)",
                 name);
}

Result<StructuredOutputsConfig> StructuredOutputsConfig::from_json_text(const std::string& text) {
    auto parsed = parse_json(text);
    if (!parsed) return error("--structured-outputs-config is not valid JSON: {}", parsed.status().message());
    const json& j = *parsed;
    if (!j.is_object()) return error("--structured-outputs-config must be a JSON object");
    StructuredOutputsConfig config;
    for (const auto& [key, value] : j.items()) {
        if (key == "backend") {
            if (!value.is_string()) return error("--structured-outputs-config: 'backend' must be a string");
            config.backend = value.get<std::string>();
            TACO_RETURN_IF_ERROR(check_backend(config.backend));
        } else if (key == "disable_any_whitespace" || key == "disable_additional_properties" ||
                   key == "disable_fallback") {
            if (!value.is_boolean()) return error("--structured-outputs-config: '{}' must be true or false", key);
            if (key == "disable_any_whitespace") config.disable_any_whitespace = value.get<bool>();
            if (key == "disable_additional_properties") config.disable_additional_properties = value.get<bool>();
        } else {
            return error("--structured-outputs-config: '{}' is not supported", key);
        }
    }
    return config;
}

bool read_structured_output(const json& body, const StructuredOutputsConfig& config,
                            std::optional<StructuredRequest>& out, ApiError& error, const ojson* ordered_body) {
    out.reset();
    StructuredOutputSpec spec;
    spec.no_additional_properties = config.disable_additional_properties;
    bool no_whitespace = config.disable_any_whitespace;
    std::optional<std::string> source;  // the field the constraint came from
    if (present(body, "response_format") &&
        !read_response_format(body.at("response_format"), child(ordered_body, "response_format"), source, spec, error))
        return false;
    if (present(body, "guided_json")) {
        if (!claim(source, "guided_json", error) ||
            !read_schema(body.at("guided_json"), "guided_json", spec, error, child(ordered_body, "guided_json")))
            return false;
    }
    if (present(body, "guided_regex")) {
        if (!claim(source, "guided_regex", error) ||
            !read_string(body.at("guided_regex"), "guided_regex", spec.text, error))
            return false;
        spec.kind = StructuredKind::kRegex;
    }
    if (present(body, "guided_choice")) {
        if (!claim(source, "guided_choice", error) ||
            !read_choices(body.at("guided_choice"), "guided_choice", spec, error))
            return false;
    }
    if (present(body, "guided_grammar")) {
        if (!claim(source, "guided_grammar", error) ||
            !read_string(body.at("guided_grammar"), "guided_grammar", spec.text, error))
            return false;
        spec.kind = StructuredKind::kGrammar;
    }
    if (present(body, "structured_outputs") &&
        !read_structured_outputs_object(body.at("structured_outputs"), child(ordered_body, "structured_outputs"),
                                        source, spec, no_whitespace, error))
        return false;
    if (present(body, "guided_whitespace_pattern")) {
        std::string pattern;
        if (!read_string(body.at("guided_whitespace_pattern"), "guided_whitespace_pattern", pattern, error))
            return false;
        spec.whitespace_pattern = pattern;
    }
    if (present(body, "guided_decoding_backend")) {
        std::string backend;
        if (!read_string(body.at("guided_decoding_backend"), "guided_decoding_backend", backend, error)) return false;
        if (Status s = StructuredOutputsConfig::check_backend(backend); !s)
            return fail(error, s.message(), "guided_decoding_backend");
    }
    if (!source) {
        if (spec.whitespace_pattern)
            return fail(
                error, "a whitespace pattern needs a JSON constraint (guided_json, response_format, ...)",
                present(body, "guided_whitespace_pattern") ? "guided_whitespace_pattern" : "structured_outputs");
        return true;
    }
    const bool json_kind = spec.kind == StructuredKind::kJsonSchema || spec.kind == StructuredKind::kJsonObject;
    if (spec.whitespace_pattern && !json_kind)
        return fail(error, fmt::format("a whitespace pattern applies to JSON output only, not to '{}'", *source),
                    present(body, "guided_whitespace_pattern") ? "guided_whitespace_pattern" : "structured_outputs");
    if (no_whitespace && !spec.whitespace_pattern) spec.whitespace_pattern = "";
    out = StructuredRequest{std::move(spec), source->substr(0, source->find('.'))};
    return true;
}

}  // namespace taco::server
