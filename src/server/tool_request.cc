#include "server/tool_request.h"

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

bool fail(ApiError& error, std::string message, std::string param) {
    error = ApiError{400, std::move(message), std::move(param), "BadRequestError"};
    return false;
}

bool present(const json& body, const char* key) { return body.contains(key) && !body.at(key).is_null(); }

// OpenAI's rule for function names: letters, digits, '_' and '-', at most 64.
bool valid_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!(std::isalnum(uint8_t(c)) || c == '_' || c == '-')) return false;
    return true;
}

struct Tool {
    std::string name;
    ojson parameters;  // the schema, in the request's key order
    bool strict = false;
};

bool read_tools(const ojson& tools, std::vector<Tool>& out, ApiError& error) {
    if (!tools.is_array()) return fail(error, "'tools' must be a list of tools", "tools");
    for (size_t i = 0; i < tools.size(); ++i) {
        const ojson& tool = tools[i];
        const std::string where = fmt::format("tools[{}]", i);
        if (!tool.is_object() || !tool.contains("type") || tool["type"] != "function")
            return fail(error,
                        fmt::format("{} must be {{\"type\": \"function\", \"function\": {{...}}}} (the only tool type "
                                    "supported)",
                                    where),
                        "tools");
        for (const auto& [key, value] : tool.items())
            if (key != "type" && key != "function")
                return fail(error, fmt::format("{}.{} is not supported", where, key), "tools");
        if (!tool.contains("function") || !tool["function"].is_object())
            return fail(error, fmt::format("{}.function must be an object", where), "tools");
        const ojson& function = tool["function"];
        Tool t;
        for (const auto& [key, value] : function.items()) {
            if (key == "name") {
                if (!value.is_string() || !valid_function_name(value.get<std::string>()))
                    return fail(error,
                                fmt::format("{}.function.name must be 1 to 64 letters, digits, '_' or '-', got {}",
                                            where, json_excerpt(value)),
                                "tools");
                t.name = value.get<std::string>();
            } else if (key == "parameters") {
                if (!value.is_object() && !value.is_null())
                    return fail(error, fmt::format("{}.function.parameters must be a JSON schema object", where),
                                "tools");
                t.parameters = value;
            } else if (key == "strict") {
                if (!value.is_boolean() && !value.is_null())
                    return fail(error, fmt::format("{}.function.strict must be true or false", where), "tools");
                t.strict = value.is_boolean() && value.get<bool>();
            } else if (key != "description") {
                return fail(error, fmt::format("{}.function.{} is not supported", where, key), "tools");
            }
        }
        if (t.name.empty()) return fail(error, fmt::format("{}.function.name is required", where), "tools");
        for (const Tool& other : out)
            if (other.name == t.name)
                return fail(error, fmt::format("{}: a second tool named '{}'", where, t.name), "tools");
        // No parameters: a function without arguments (OpenAI), {}.
        if (t.parameters.is_null())
            t.parameters = ojson{{"type", "object"}, {"properties", ojson::object()}, {"additionalProperties", false}};
        out.push_back(std::move(t));
    }
    return true;
}

// {"name": <const>, <arguments_key>: <parameters>} for one tool: a call object of the parser's format.
ojson call_schema(const Tool& tool, const char* arguments_key, bool name_as_enum) {
    ojson name =
        name_as_enum ? ojson{{"type", "string"}, {"enum", ojson::array({tool.name})}} : ojson{{"const", tool.name}};
    ojson properties = ojson::object();
    properties["name"] = std::move(name);
    properties[arguments_key] = tool.parameters;
    return ojson{{"type", "object"},
                 {"properties", std::move(properties)},
                 {"required", ojson::array({"name", arguments_key})},
                 {"additionalProperties", false}};
}

ojson any_call_schema(const std::vector<const Tool*>& tools, const char* arguments_key, bool name_as_enum) {
    if (tools.size() == 1) return call_schema(*tools[0], arguments_key, name_as_enum);
    ojson branches = ojson::array();
    for (const Tool* t : tools) branches.push_back(call_schema(*t, arguments_key, name_as_enum));
    return ojson{{"anyOf", std::move(branches)}};
}

}  // namespace

bool read_tool_request(const json& body, const ojson* ordered_body, const ToolServerOptions& options, ToolRequest& out,
                       ApiError& error) {
    out = ToolRequest{};
    out.output.reasoning = options.reasoning_parser;
    std::vector<Tool> tools;
    if (present(body, "tools")) {
        const ojson tools_json = ordered_body && ordered_body->contains("tools")
                                     ? ordered_body->at("tools")
                                     : ojson::parse(body.at("tools").dump());
        if (!read_tools(tools_json, tools, error)) return false;
        if (!tools.empty()) out.template_tools = tools_json;
    }
    if (present(body, "parallel_tool_calls")) {
        if (!body.at("parallel_tool_calls").is_boolean())
            return fail(error, "'parallel_tool_calls' must be true or false", "parallel_tool_calls");
        out.output.parallel_tool_calls = body.at("parallel_tool_calls").get<bool>();
    }
    // As vLLM: tools without tool_choice mean "auto"; no tools mean "none".
    ToolChoice choice = tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    const Tool* named = nullptr;
    if (present(body, "tool_choice")) {
        const json& tc = body.at("tool_choice");
        if (tc.is_string()) {
            const std::string s = tc.get<std::string>();
            if (s == "none") {
                choice = ToolChoice::kNone;
            } else if (s == "auto") {
                choice = ToolChoice::kAuto;
            } else if (s == "required") {
                choice = ToolChoice::kRequired;
            } else {
                return fail(error,
                            fmt::format("'tool_choice' must be \"none\", \"auto\", \"required\" or {{\"type\": "
                                        "\"function\", \"function\": {{\"name\": ...}}}}, got \"{}\"",
                                        s),
                            "tool_choice");
            }
        } else if (tc.is_object() && tc.value("type", "") == "function" && tc.contains("function") &&
                   tc.at("function").is_object() && tc.at("function").contains("name") &&
                   tc.at("function").at("name").is_string()) {
            const std::string name = tc.at("function").at("name").get<std::string>();
            for (const Tool& t : tools)
                if (t.name == name) named = &t;
            if (!named)
                return fail(error, fmt::format("tool_choice names the function '{}', which is not in 'tools'", name),
                            "tool_choice");
            choice = ToolChoice::kNamed;
        } else {
            return fail(error,
                        fmt::format("'tool_choice' must be \"none\", \"auto\", \"required\" or {{\"type\": "
                                    "\"function\", \"function\": {{\"name\": ...}}}}, got {}",
                                    json_excerpt(tc)),
                        "tool_choice");
        }
        if (choice != ToolChoice::kNone && tools.empty())
            return fail(error, "When using `tool_choice`, `tools` must be set.", "tool_choice");
    }
    out.output.tool_choice = choice;
    switch (choice) {
        case ToolChoice::kNone: return true;
        case ToolChoice::kAuto: {
            if (!options.enable_auto_tool_choice || !options.tool_call_parser)
                return fail(error,
                            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                            "tool_choice");
            out.output.tool_format = options.tool_call_parser;
            const Tool* strict = nullptr;
            for (const Tool& t : tools)
                if (t.strict && !strict) strict = &t;
            if (!strict) return true;
            // A strict tool under "auto": free text, then optionally calls in the parser's tags, each valid for its
            // schema (a tool that is not strict takes any object). Only formats whose calls follow a tag.
            const std::optional<ConstrainedToolFormat> wrapped = constrained_tool_format(*options.tool_call_parser);
            if (!wrapped || wrapped->sequence.begin.empty())
                return fail(error,
                            fmt::format("tools: '{}' is strict, which tool_choice \"auto\" with the {} parser "
                                        "cannot promise (its calls have no tag to start the schema at); use "
                                        "\"required\", name the function, or the hermes or mistral parser",
                                        strict->name, tool_call_format_name(*options.tool_call_parser)),
                            "tools");
            std::vector<Tool> loose = tools;
            for (Tool& t : loose)
                if (!t.strict) t.parameters = ojson{{"type", "object"}};
            std::vector<const Tool*> callable;
            for (const Tool& t : loose) callable.push_back(&t);
            structured::StructuredOutputSpec spec;
            spec.kind = structured::StructuredKind::kJsonSchema;
            spec.text = any_call_schema(callable, wrapped->arguments_key, false).dump();
            spec.sequence = wrapped->sequence;
            spec.sequence->free_text_without =
                *options.tool_call_parser == ToolCallFormat::kHermes ? "<tool_call>" : "[TOOL_CALLS]";
            if (!out.output.parallel_tool_calls) spec.sequence->max_items = 1;
            out.constraint = std::move(spec);
            return true;
        }
        case ToolChoice::kRequired:
        case ToolChoice::kNamed: break;
    }
    // Constrained: the parser's format when it is JSON, else vLLM's.
    std::vector<const Tool*> callable;
    if (named) {
        callable.push_back(named);
    } else {
        for (const Tool& t : tools) callable.push_back(&t);
    }
    structured::StructuredOutputSpec spec;
    spec.kind = structured::StructuredKind::kJsonSchema;
    const std::optional<ConstrainedToolFormat> wrapped =
        options.tool_call_parser ? constrained_tool_format(*options.tool_call_parser) : std::nullopt;
    if (wrapped) {
        spec.text = any_call_schema(callable, wrapped->arguments_key, false).dump();
        spec.sequence = wrapped->sequence;
        if (named || !out.output.parallel_tool_calls) spec.sequence->max_items = 1;
        out.output.tool_format = options.tool_call_parser;
    } else if (named) {
        spec.text = named->parameters.dump();
        out.output.named_arguments = true;
        out.output.named_function = named->name;
    } else {
        ojson list = {{"type", "array"}, {"minItems", 1}, {"items", any_call_schema(callable, "parameters", true)}};
        if (!out.output.parallel_tool_calls) list["maxItems"] = 1;
        spec.text = list.dump();
        out.output.tool_format = ToolCallFormat::kJsonArray;
    }
    out.constraint = std::move(spec);
    return true;
}

}  // namespace taco::server
