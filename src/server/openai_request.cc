#include "server/openai_request.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/json_util.h"
#include "engine/sampling_json.h"
#include "server/beam_search_request.h"
#include "server/structured_request.h"
#include "server/tool_request.h"
#include "server/vllm_fields.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

std::optional<CompletionJob> fail(ApiError& error, std::string message, std::string param, int status = 400) {
    error = ApiError{status, std::move(message), std::move(param), status == 404 ? "NotFoundError" : "BadRequestError"};
    return std::nullopt;
}

bool present(const json& body, const char* key) { return body.contains(key) && !body.at(key).is_null(); }

// Reads a boolean key; absent/null leaves `out` unchanged.
bool read_bool(const json& body, const char* key, bool& out, ApiError& error) {
    if (!present(body, key)) return true;
    if (!body.at(key).is_boolean()) {
        fail(error, fmt::format("'{}' must be true or false, got {}", key, json_excerpt(body.at(key))), key);
        return false;
    }
    out = body.at(key).get<bool>();
    return true;
}

// Returns false (with `error` set) for a token-id list with a non-id entry.
bool read_ids(const json& list, std::vector<int32_t>& ids, ApiError& error) {
    for (const json& id : list) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
            fail(error, fmt::format("'prompt' holds {}, which is not a token id", json_excerpt(id)), "prompt");
            return false;
        }
        ids.push_back(id.get<int32_t>());
    }
    return true;
}

// A request starts num_prompts x max(n, best_of) engine sequences; refused past ctx.max_sequences_per_request.
bool check_sequence_count(int64_t num_prompts, const SamplingParams& params, const ParseContext& ctx, ApiError& error) {
    const int64_t samples = std::max(params.n, params.best_of.value_or(params.n));
    if (num_prompts * samples <= ctx.max_sequences_per_request) return true;
    fail(error,
         fmt::format("the request asks for {} prompts x {} samples = {} sequences, more than this server's limit of "
                     "{} (--max-pending-requests)",
                     num_prompts, samples, num_prompts * samples, ctx.max_sequences_per_request),
         num_prompts > 1 ? "prompt" : "n");
    return false;
}

// Common parameters of both endpoints: model, stream, stream_options, user, sampling keys.
bool read_common(const json& body, const ParseContext& ctx, CompletionJob& job, SamplingParams& params, ApiError& error,
                 const nlohmann::ordered_json* ordered_body) {
    if (present(body, "model")) {
        if (!body.at("model").is_string()) {
            fail(error, "'model' must be a string", "model");
            return false;
        }
        job.model = body.at("model").get<std::string>();
        if (std::find(ctx.model_names.begin(), ctx.model_names.end(), job.model) == ctx.model_names.end()) {
            fail(error, fmt::format("The model `{}` does not exist.", job.model), "model", 404);
            return false;
        }
    } else {
        job.model = ctx.model_names.at(0);  // vLLM serves the first name when "model" is left out
    }
    job.system_fingerprint = ctx.system_fingerprint;
    if (!read_bool(body, "stream", job.stream, error)) return false;
    if (present(body, "stream_options")) {
        const json& options = body.at("stream_options");
        if (!options.is_object()) {
            fail(error, "'stream_options' must be an object", "stream_options");
            return false;
        }
        if (!job.stream) {
            fail(error, "'stream_options' is only allowed when 'stream' is true", "stream_options");
            return false;
        }
        if (!read_bool(options, "include_usage", job.include_usage, error)) return false;
        if (!read_bool(options, "continuous_usage_stats", job.continuous_usage, error)) return false;
    }
    if (job.stream && ctx.force_include_usage) job.include_usage = true;
    if (present(body, "user") && !body.at("user").is_string()) {
        fail(error, "'user' must be a string", "user");
        return false;
    }
    if (!read_bool(body, "return_token_ids", job.return_token_ids, error)) return false;
    if (!read_bool(body, "return_tokens_as_token_ids", job.return_tokens_as_token_ids, error)) return false;
    if (present(body, "priority")) {
        const json& priority = body.at("priority");
        if (!priority.is_number_integer() || (priority.is_number_unsigned() && priority.get<uint64_t>() > INT64_MAX)) {
            fail(error, fmt::format("'priority' must be an integer, got {}", json_excerpt(priority)), "priority");
            return false;
        }
        job.priority = priority.get<int64_t>();
        if (job.priority != 0 && ctx.engine->scheduling_policy() != SchedulingPolicy::kPriority) {
            fail(error,
                 fmt::format("'priority' {} needs the server started with --scheduling-policy priority (it schedules "
                             "first come, first served)",
                             job.priority),
                 "priority");
            return false;
        }
    }
    ctx.defaults.apply(params);
    Status status = apply_sampling_json(body, params);
    if (!status) {
        // The message names the key in quotes: 'top_p' must be ...
        std::string param;
        const std::string& m = status.message();
        if (m.size() > 1 && m[0] == '\'') param = m.substr(1, m.find('\'', 1) - 1);
        fail(error, m, param);
        return false;
    }
    // Checked here, before any per-sample or per-prompt state exists (SamplingParams::validate checks again).
    const std::pair<const char*, int64_t> samples[] = {{"n", params.n}, {"best_of", params.best_of.value_or(1)}};
    for (const auto& [key, value] : samples) {
        if (value > limits::kMaxSamplesPerPrompt) {
            fail(error,
                 fmt::format("'{}' must be at most {} (limits::kMaxSamplesPerPrompt), got {}", key,
                             limits::kMaxSamplesPerPrompt, value),
                 key);
            return false;
        }
    }
    if (present(body, "logit_bias") && !body.at("logit_bias").is_object()) {
        fail(error, "'logit_bias' must be an object of token id -> bias", "logit_bias");
        return false;
    }
    // Structured output: compiled here, so that a bad schema, regex or grammar is this request's 400.
    std::optional<StructuredRequest> structured;
    const StructuredOutputsConfig defaults;
    if (!read_structured_output(body, ctx.structured_outputs ? *ctx.structured_outputs : defaults, structured, error,
                                ordered_body))
        return false;
    if (structured) {
        auto grammar = ctx.engine->compile_structured(structured->spec);
        if (!grammar) {
            fail(error, grammar.status().message(), structured->param);
            return false;
        }
        params.grammar = *grammar;
    }
    job.want_prompt_logprobs_field = params.prompt_logprobs.has_value();
    if (job.want_prompt_logprobs_field && job.stream) {  // as vLLM
        fail(error, "'prompt_logprobs' is not available when 'stream' is true", "prompt_logprobs");
        return false;
    }
    return true;
}

// Completions take no tools (chat does: server/tool_request.h); OpenAI's older `functions` is refused on both.
bool check_unsupported(const json& body, ApiError& error, bool chat) {
    if (!chat && present(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty())) {
        fail(error, "'tools' is a chat completions field; /v1/completions takes none", "tools");
        return false;
    }
    if (!chat && present(body, "tool_choice") && body.at("tool_choice") != "none") {
        fail(error, "'tool_choice' is a chat completions field; /v1/completions takes none", "tool_choice");
        return false;
    }
    for (const char* key : {"functions", "function_call"}) {
        if (present(body, key)) {
            fail(error, fmt::format("'{}' (OpenAI's deprecated function calling) is not supported; use 'tools'", key),
                 key);
            return false;
        }
    }
    return true;
}

// An assistant message's tool_calls for the template: each {id, type, function: {name, arguments}}, the arguments'
// JSON text turned into an object as vLLM gives it to templates (which write `arguments | tojson`).
bool read_message_tool_calls(const json& calls, const std::string& where, nlohmann::ordered_json& out,
                             ApiError& error) {
    if (!calls.is_array()) {
        fail(error, fmt::format("{}.tool_calls must be a list", where), "messages");
        return false;
    }
    out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const json& call = calls.at(i);
        const std::string at = fmt::format("{}.tool_calls[{}]", where, i);
        if (!call.is_object() || !call.contains("function") || !call.at("function").is_object() ||
            !call.at("function").contains("name") || !call.at("function").at("name").is_string()) {
            fail(error,
                 fmt::format("{} must be {{\"id\", \"type\": \"function\", \"function\": {{\"name\", "
                             "\"arguments\"}}}}",
                             at),
                 "messages");
            return false;
        }
        nlohmann::ordered_json c = nlohmann::ordered_json::object();
        if (call.contains("id")) c["id"] = call.at("id");
        c["type"] = call.value("type", "function");
        nlohmann::ordered_json function = {{"name", call.at("function").at("name")}};
        const json arguments = call.at("function").value("arguments", json("{}"));
        if (arguments.is_string()) {
            auto parsed = parse_ordered_json(arguments.get<std::string>());
            function["arguments"] = parsed ? *parsed : nlohmann::ordered_json(arguments.get<std::string>());
        } else {
            function["arguments"] = nlohmann::ordered_json::parse(arguments.dump());
        }
        c["function"] = std::move(function);
        out.push_back(std::move(c));
    }
    return true;
}

}  // namespace

std::string error_body(const ApiError& e) {
    json body = {{"error",
                  {{"message", e.message},
                   {"type", e.type},
                   {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                   {"code", e.status}}}};
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string token_text(const Tokenizer* tokenizer, int32_t token) {
    if (!tokenizer) return fmt::format("token_id:{}", token);
    return tokenizer->decode({token}, false);
}

std::optional<CompletionJob> parse_completion_request(const json& body, const ParseContext& ctx, ApiError& error,
                                                      const nlohmann::ordered_json* ordered_body) {
    if (!body.is_object()) return fail(error, "the request body must be a JSON object", "");
    CompletionJob job;
    job.endpoint = Endpoint::kCompletion;
    SamplingParams params;
    if (!read_common(body, ctx, job, params, error, ordered_body)) return std::nullopt;
    if (present(body, "suffix")) return fail(error, "'suffix' is not supported", "suffix");
    if (!check_unsupported(body, error, /*chat=*/false)) return std::nullopt;
    if (auto field = unimplemented_vllm_field(body)) return fail(error, field->message, field->field);
    if (!read_bool(body, "echo", job.echo, error)) return std::nullopt;
    job.want_logprobs = params.logprobs.has_value();
    // echo with logprobs reports the prompt's tokens too (lm-eval-harness scores prompts with max_tokens 0).
    if (job.echo && job.want_logprobs && !params.prompt_logprobs) params.prompt_logprobs = params.logprobs;
    if (params.max_tokens == 0 && !job.echo)
        return fail(error, "max_tokens must be at least 1, got 0 (0, the prompt only, needs 'echo')", "max_tokens");
    job.n = params.n;
    job.max_tokens = params.max_tokens;
    if (!read_beam_search(body, params, job, job.beam_search, error)) return std::nullopt;
    if (!present(body, "prompt")) return fail(error, "'prompt' is required", "prompt");
    const json& prompt = body.at("prompt");
    const Tokenizer* tokenizer = ctx.engine->tokenizer();
    auto add_ids = [&](std::vector<int32_t> ids) {
        GenerationInput input{std::nullopt, std::move(ids), params};
        job.echo_texts.push_back(job.echo && tokenizer ? tokenizer->decode(input.prompt_ids, false) : "");
        job.inputs.push_back(std::move(input));
    };
    auto add_text = [&](std::string text) {
        job.echo_texts.push_back(job.echo ? text : "");
        job.inputs.push_back(GenerationInput{std::move(text), {}, params});
    };
    // A list of strings or of id lists is one prompt per item; counted before any is copied.
    const bool prompt_list = prompt.is_array() && !prompt.empty() && !prompt.at(0).is_number();
    if (!check_sequence_count(prompt_list ? int64_t(prompt.size()) : 1, params, ctx, error)) return std::nullopt;
    const std::string kPromptShape =
        "'prompt' must be a string, a list of strings, a list of token ids or a list of "
        "token-id lists";
    if (prompt.is_string()) {
        add_text(prompt.get<std::string>());
    } else if (prompt.is_array() && !prompt.empty() && prompt.at(0).is_number()) {
        std::vector<int32_t> ids;
        if (!read_ids(prompt, ids, error)) return std::nullopt;
        add_ids(std::move(ids));
    } else if (prompt.is_array() && !prompt.empty()) {
        for (const json& item : prompt) {
            if (item.is_string()) {
                add_text(item.get<std::string>());
            } else if (item.is_array() && !item.empty()) {
                std::vector<int32_t> ids;
                if (!read_ids(item, ids, error)) return std::nullopt;
                add_ids(std::move(ids));
            } else {
                return fail(error, kPromptShape, "prompt");
            }
        }
    } else {
        return fail(error, kPromptShape, "prompt");
    }
    for (GenerationInput& input : job.inputs) {
        if (input.prompt && !tokenizer)
            return fail(error, "this model has no tokenizer: send token ids as 'prompt'", "prompt");
        input.priority = job.priority;
    }
    return job;
}

std::optional<std::string> render_chat(const json& body, const ParseContext& ctx, ApiError& error,
                                       const nlohmann::ordered_json* ordered_body, bool with_tools) {
    // A request's own template, only with --trust-request-chat-template (vLLM's rule and message).
    const ChatTemplate* chat_template = ctx.chat_template;
    std::optional<ChatTemplate> own_template;
    const bool kwargs_template = present(body, "chat_template_kwargs") && body.at("chat_template_kwargs").is_object() &&
                                 present(body.at("chat_template_kwargs"), "chat_template");
    if (present(body, "chat_template") || kwargs_template) {
        const char* param = present(body, "chat_template") ? "chat_template" : "chat_template_kwargs";
        if (!ctx.trust_request_chat_template) {
            fail(error,
                 "Chat template is passed with request, but --trust-request-chat-template is not set. Refused "
                 "request with untrusted chat template.",
                 param);
            return std::nullopt;
        }
        const json& text = present(body, "chat_template") ? body.at("chat_template")
                                                          : body.at("chat_template_kwargs").at("chat_template");
        if (!text.is_string()) {
            fail(error, fmt::format("'{}' must be a string (a Jinja chat template)", param), param);
            return std::nullopt;
        }
        auto compiled = ChatTemplate::from_string(text.get<std::string>(), ctx.bos_token, ctx.eos_token);
        if (!compiled) {
            fail(error, fmt::format("{}: {}", param, compiled.status().message()), param);
            return std::nullopt;
        }
        own_template.emplace(std::move(*compiled));
        chat_template = &*own_template;
    }
    if (!chat_template) {
        fail(error, "this model has no chat template; pass --chat-template to `taco_llm serve`", "messages");
        return std::nullopt;
    }
    if (!present(body, "messages") || !body.at("messages").is_array() || body.at("messages").empty()) {
        fail(error, "'messages' must be a non-empty list of messages", "messages");
        return std::nullopt;
    }
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::array();
    for (size_t i = 0; i < body.at("messages").size(); ++i) {
        const json& message = body.at("messages").at(i);
        const std::string where = fmt::format("messages[{}]", i);
        if (!message.is_object() || !message.contains("role") || !message.at("role").is_string()) {
            fail(error, fmt::format("{} must be an object with a string 'role'", where), "messages");
            return std::nullopt;
        }
        nlohmann::ordered_json out = {{"role", message.at("role")}};
        const json content = message.value("content", json(nullptr));
        if (content.is_string() || content.is_null()) {
            out["content"] = content;
        } else if (content.is_array()) {
            // Text parts are joined with newlines, as vLLM does for templates that take string content.
            std::string text;
            for (const json& part : content) {
                if (!part.is_object() || !part.contains("type") || part.at("type") != "text" ||
                    !part.contains("text") || !part.at("text").is_string()) {
                    fail(error,
                         fmt::format("{}.content: only {{\"type\": \"text\", \"text\": ...}} parts are supported",
                                     where),
                         "messages");
                    return std::nullopt;
                }
                if (!text.empty()) text += "\n";
                text += part.at("text").get<std::string>();
            }
            out["content"] = text;
        } else {
            fail(error, fmt::format("{}.content must be a string or a list of text parts", where), "messages");
            return std::nullopt;
        }
        if (message.contains("name") && message.at("name").is_string()) out["name"] = message.at("name");
        if (message.contains("tool_calls") && !message.at("tool_calls").is_null()) {
            if (!read_message_tool_calls(message.at("tool_calls"), where, out["tool_calls"], error))
                return std::nullopt;
        }
        for (const char* key : {"tool_call_id", "reasoning_content"}) {
            if (!message.contains(key) || message.at(key).is_null()) continue;
            if (!message.at(key).is_string()) {
                fail(error, fmt::format("{}.{} must be a string", where, key), "messages");
                return std::nullopt;
            }
            out[key] = message.at(key);
        }
        inputs.messages.push_back(std::move(out));
    }
    // tools and documents as sent (key order kept: templates write them with tojson).
    for (const char* key : {"tools", "documents"}) {
        if (!present(body, key) || (body.at(key).is_array() && body.at(key).empty())) continue;
        if (!with_tools && std::string(key) == "tools") continue;
        if (!body.at(key).is_array()) {
            fail(error, fmt::format("'{}' must be a list", key), key);
            return std::nullopt;
        }
        nlohmann::ordered_json value = ordered_body && ordered_body->contains(key)
                                           ? ordered_body->at(key)
                                           : nlohmann::ordered_json::parse(body.at(key).dump());
        (std::string(key) == "tools" ? inputs.tools : inputs.documents) = std::move(value);
    }
    // continue_final_message: the last message is left open for the model to continue, so no generation prompt
    // follows it. Both set explicitly is vLLM's 400; continue_final_message alone turns the default prompt off.
    bool continue_final = false;
    if (!read_bool(body, "continue_final_message", continue_final, error)) return std::nullopt;
    inputs.add_generation_prompt = !continue_final;
    if (!read_bool(body, "add_generation_prompt", inputs.add_generation_prompt, error)) return std::nullopt;
    if (continue_final && inputs.add_generation_prompt) {
        fail(error,
             "Cannot set both 'continue_final_message' and 'add_generation_prompt' to true: the first continues the "
             "last message, the second starts a new one",
             "continue_final_message");
        return std::nullopt;
    }
    inputs.extra = nlohmann::ordered_json(ctx.default_chat_template_kwargs);
    if (present(body, "reasoning_effort")) {
        // vLLM's values; templates that read it (gpt-oss style) get it, as vLLM passes it to the template.
        const json& effort = body.at("reasoning_effort");
        if (!effort.is_string() || (effort != "low" && effort != "medium" && effort != "high")) {
            fail(
                error,
                fmt::format("'reasoning_effort' must be \"low\", \"medium\" or \"high\", got {}", json_excerpt(effort)),
                "reasoning_effort");
            return std::nullopt;
        }
        inputs.extra["reasoning_effort"] = effort.get<std::string>();
    }
    if (present(body, "chat_template_kwargs")) {
        if (!body.at("chat_template_kwargs").is_object()) {
            fail(error, "'chat_template_kwargs' must be an object", "chat_template_kwargs");
            return std::nullopt;
        }
        // The request's kwargs over the server's defaults and reasoning_effort (a few keys: the merge stays linear).
        nlohmann::ordered_json kwargs(body.at("chat_template_kwargs"));  // linear, unlike a re-parse
        for (const auto& [key, value] : inputs.extra.items())
            if (!kwargs.contains(key)) kwargs[key] = value;
        inputs.extra = std::move(kwargs);
    }
    auto rendered = chat_template->render(inputs);
    if (!rendered) {
        fail(error, fmt::format("chat template: {}", rendered.status().message()), "messages");
        return std::nullopt;
    }
    if (continue_final) {
        // As transformers' apply_chat_template: cut after the last occurrence of the final message's text (its last
        // text part), stripped of surrounding whitespace.
        const json& last = body.at("messages").back();
        std::string final_text;
        const json content = last.value("content", json(nullptr));
        if (content.is_string()) final_text = content.get<std::string>();
        if (content.is_array() && !content.empty()) final_text = content.back().value("text", "");
        const size_t begin = final_text.find_first_not_of(" \t\n\r\f\v");
        final_text = begin == std::string::npos
                         ? ""
                         : final_text.substr(begin, final_text.find_last_not_of(" \t\n\r\f\v") - begin + 1);
        const size_t at = rendered->rfind(final_text);
        if (at == std::string::npos) {
            fail(error,
                 "continue_final_message is set but the final message does not appear in the rendered chat (the "
                 "chat template changes it); remove continue_final_message",
                 "continue_final_message");
            return std::nullopt;
        }
        rendered->resize(at + final_text.size());
    }
    return *rendered;
}

std::optional<CompletionJob> parse_chat_request(const json& body, const ParseContext& ctx, ApiError& error,
                                                const nlohmann::ordered_json* ordered_body) {
    if (!body.is_object()) return fail(error, "the request body must be a JSON object", "");
    CompletionJob job;
    job.endpoint = Endpoint::kChat;
    job.role = ctx.response_role;
    // Chat's logprobs is a boolean with top_logprobs beside it; the rest are shared with completions.
    json sampling = body;
    sampling.erase("logprobs");
    SamplingParams params;
    if (!read_common(sampling, ctx, job, params, error, ordered_body)) return std::nullopt;
    if (!check_unsupported(body, error, /*chat=*/true)) return std::nullopt;
    if (auto field = unimplemented_vllm_field(body)) return fail(error, field->message, field->field);
    if (!read_bool(body, "echo", job.echo, error)) return std::nullopt;
    if (params.max_tokens == 0) return fail(error, "max_tokens must be at least 1, got 0", "max_tokens");
    if (!read_bool(body, "logprobs", job.want_logprobs, error)) return std::nullopt;
    params.logprobs.reset();
    if (job.want_logprobs) params.logprobs = 0;
    if (present(body, "top_logprobs")) {
        const json& top = body.at("top_logprobs");
        if (!top.is_number_integer() || top.get<int64_t>() < 0 || top.get<int64_t>() > SamplingParams::kMaxLogprobs)
            return fail(error, "'top_logprobs' must be an integer in [0, 20]", "top_logprobs");
        // As vLLM: 0 means none, so {"logprobs": false, "top_logprobs": 0} is accepted.
        if (!job.want_logprobs && top.get<int64_t>() > 0)
            return fail(error, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
        if (job.want_logprobs) params.logprobs = top.get<int64_t>();
    }
    job.n = params.n;
    if (!check_sequence_count(1, params, ctx, error)) return std::nullopt;
    if (!ctx.engine->tokenizer()) return fail(error, "this model has no tokenizer; chat needs one", "messages");
    ToolRequest tools;
    const ToolServerOptions no_tool_options;
    if (!read_tool_request(body, ordered_body, ctx.tools ? *ctx.tools : no_tool_options, tools, error))
        return std::nullopt;
    if (tools.constraint) {
        if (params.grammar)
            return fail(error,
                        "tool_choice \"required\" or a named function constrains the output already; drop the "
                        "structured-output field",
                        "tool_choice");
        auto grammar = ctx.engine->compile_structured(*tools.constraint);
        if (!grammar) return fail(error, fmt::format("tools: {}", grammar.status().message()), "tools");
        params.grammar = *grammar;
    }
    job.chat_output = tools.output;
    if (!read_bool(body, "include_reasoning", job.chat_output.include_reasoning, error)) return std::nullopt;
    // As vLLM's hermes and mistral parsers: their tags may be special tokens, which the text must keep.
    if (job.chat_output.tool_format == ToolCallFormat::kHermes ||
        job.chat_output.tool_format == ToolCallFormat::kMistral)
        params.skip_special_tokens = false;
    const bool exclude_tools =
        ctx.tools && ctx.tools->exclude_tools_when_tool_choice_none && job.chat_output.tool_choice == ToolChoice::kNone;
    auto prompt = render_chat(body, ctx, error, ordered_body, !exclude_tools);
    if (!prompt) return std::nullopt;
    // A reasoning model's structured answer follows its thinking, unless the prompt closed the think block already.
    if (params.grammar && job.chat_output.reasoning && !prompt_closes_reasoning(*prompt))
        params.grammar_after = std::string(kThinkEnd);
    // The template already holds the special tokens it wants (vLLM tokenizes chat prompts without adding any).
    auto ids = ctx.engine->tokenizer()->encode(*prompt, false);
    if (!ids) return fail(error, ids.status().message(), "messages");
    if (!present(body, "max_tokens") && !present(body, "max_completion_tokens")) {
        // What the prompt keeps after truncate_prompt_tokens (the engine truncates it).
        int64_t num_prompt = int64_t(ids->size());
        if (params.truncate_prompt_tokens)
            num_prompt = std::min(num_prompt, *params.truncate_prompt_tokens == -1 ? ctx.engine->max_model_len()
                                                                                   : *params.truncate_prompt_tokens);
        params.max_tokens = std::max<int64_t>(1, ctx.engine->max_model_len() - num_prompt);
        if (ctx.defaults.max_tokens) params.max_tokens = std::min(params.max_tokens, *ctx.defaults.max_tokens);
    }
    job.max_tokens = params.max_tokens;
    if (!read_beam_search(body, params, job, job.beam_search, error)) return std::nullopt;
    job.inputs.push_back(GenerationInput{std::nullopt, std::move(*ids), params, job.priority});
    // echo (vLLM): the last message's content comes first in the reply when its role is the reply's.
    std::string echo_text;
    const json& last = body.at("messages").back();
    if (job.echo && last.value("role", "") == ctx.response_role) {
        const json content = last.value("content", json(nullptr));
        if (content.is_string()) echo_text = content.get<std::string>();
        for (size_t i = 0; content.is_array() && i < content.size(); ++i)
            echo_text += (i > 0 ? "\n" : "") + content.at(i).value("text", "");
    }
    job.echo_texts.push_back(std::move(echo_text));
    return job;
}

}  // namespace taco::server
