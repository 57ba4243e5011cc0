#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/json_util.h"

namespace taco {

namespace {

// Special tokens the template sees, in tokenizer.special_tokens_map's order.
constexpr const char* kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

std::optional<std::string> token_content(const nlohmann::ordered_json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object()) {
        auto it = value.find("content");
        if (it != value.end() && it->is_string()) return it->get<std::string>();
    }
    return std::nullopt;
}

Result<nlohmann::ordered_json> read_ordered_json(const std::string& path) {
    TACO_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
    auto parsed = parse_ordered_json(text);
    if (!parsed) return parsed.status().with_context(path);
    return std::move(*parsed);
}

Result<ChatTemplate> compile_error(const Status& status, const std::string& where) {
    return Status::error(fmt::format("{}: chat template syntax error: {}", where, status.message()));
}

}  // namespace

Result<ChatTemplate> ChatTemplate::from_string(std::string source, std::string bos_token, std::string eos_token) {
    auto compiled = jinja::Template::parse(source);
    if (!compiled.is_ok()) return compile_error(compiled.status(), "chat template");
    ChatTemplate result;
    result.source_ = std::move(source);
    result.default_ = std::move(compiled).value();
    if (!bos_token.empty()) result.special_tokens_.emplace_back("bos_token", std::move(bos_token));
    if (!eos_token.empty()) result.special_tokens_.emplace_back("eos_token", std::move(eos_token));
    return result;
}

Result<ChatTemplate> ChatTemplate::from_dir(const std::string& dir) {
    const std::string config_path = join_path(dir, "tokenizer_config.json");
    const std::string jinja_path = join_path(dir, "chat_template.jinja");
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    if (file_exists(config_path)) {
        TACO_ASSIGN_OR_RETURN(config, read_ordered_json(config_path));
        if (!config.is_object()) return error("{}: expected a JSON object", config_path);
    } else if (!file_exists(jinja_path)) {
        return error("{}: no chat template (neither tokenizer_config.json nor chat_template.jinja exists)", dir);
    }
    ChatTemplate result;
    std::optional<std::string> tool_use_source;
    bool have_default = false;
    std::string where;
    if (file_exists(jinja_path)) {
        TACO_ASSIGN_OR_RETURN(result.source_, read_text_file(jinja_path));
        have_default = true;
        where = jinja_path;
    } else {
        auto it = config.find("chat_template");
        if (it == config.end() || it->is_null()) {
            return error("{}: no chat template (no \"chat_template\" key, and no chat_template.jinja in {})",
                         config_path, dir);
        }
        where = config_path;
        if (it->is_string()) {
            result.source_ = it->get<std::string>();
            have_default = true;
        } else if (it->is_array()) {
            for (const auto& entry : *it) {
                if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
                    !entry["name"].is_string() || !entry["template"].is_string())
                    return error("{}: \"chat_template\" list entries must be {{\"name\": str, \"template\": str}}",
                                 config_path);
                if (entry["name"] == "default") {
                    result.source_ = entry["template"].get<std::string>();
                    have_default = true;
                } else if (entry["name"] == "tool_use") {
                    tool_use_source = entry["template"].get<std::string>();
                }
            }
            if (!have_default && !tool_use_source)
                return error("{}: \"chat_template\" lists named templates but none is named \"default\"", config_path);
        } else {
            return error("{}: \"chat_template\" must be a string or a list of named templates", config_path);
        }
    }
    if (have_default) {
        auto compiled = jinja::Template::parse(result.source_);
        if (!compiled.is_ok()) return compile_error(compiled.status(), where);
        result.default_ = std::move(compiled).value();
    }
    if (tool_use_source) {
        auto compiled = jinja::Template::parse(*tool_use_source);
        if (!compiled.is_ok()) return compile_error(compiled.status(), where + " (tool_use)");
        result.tool_use_ = std::move(compiled).value();
    }
    for (const char* key : kSpecialTokenKeys) {
        auto it = config.find(key);
        if (it == config.end()) continue;
        if (auto content = token_content(*it)) result.special_tokens_.emplace_back(key, *content);
    }
    return result;
}

Result<std::string> ChatTemplate::render(const ChatTemplateInputs& inputs) const {
    using jinja::Value;
    if (!inputs.messages.is_array()) return Status::error("chat template: messages must be a JSON array");
    if (inputs.messages.empty())
        return Status::error("Cannot apply chat template to an empty conversation. Provide at least one message.");
    const jinja::Template* compiled = (!inputs.tools.is_null() && tool_use_) ? &*tool_use_
                                      : default_                             ? &*default_
                                                                             : nullptr;
    if (!compiled)
        return Status::error(
            "this model has multiple chat templates with no default specified (only \"tool_use\", "
            "which needs tools)");
    if (!inputs.tools.is_null() && !inputs.tools.is_array())
        return Status::error("chat template: tools must be null or a JSON array");
    if (!inputs.extra.is_null() && !inputs.extra.is_object())
        return Status::error("chat template: chat_template_kwargs must be a JSON object");
    if (!inputs.documents.is_null() && !inputs.documents.is_array())
        return Status::error("chat template: documents must be null or a JSON array");
    for (const auto* part : {&inputs.messages, &inputs.tools, &inputs.documents, &inputs.extra}) {
        if (!jinja::json_depth_within(*part, jinja::kMaxJsonInputDepth))
            return error("chat template: input JSON nests deeper than {} levels", jinja::kMaxJsonInputDepth);
    }
    std::vector<std::pair<std::string, Value>> context;
    context.emplace_back("messages", Value::from_json(inputs.messages));
    context.emplace_back("tools", Value::from_json(inputs.tools));
    context.emplace_back("documents", Value::from_json(inputs.documents));
    context.emplace_back("add_generation_prompt", Value::boolean(inputs.add_generation_prompt));
    for (const auto& [name, token] : special_tokens_) context.emplace_back(name, Value::string(token));
    if (inputs.date_string) context.emplace_back("date_string", Value::string(*inputs.date_string));
    if (inputs.extra.is_object()) {
        for (const auto& [key, value] : inputs.extra.items()) context.emplace_back(key, Value::from_json(value));
    }
    jinja::RenderOptions options;
    options.now_epoch_seconds = inputs.now_epoch_seconds;
    auto rendered = compiled->render(context, options);
    if (!rendered.is_ok()) return Status::error("chat template: " + rendered.status().message());
    return rendered;
}

}  // namespace taco
