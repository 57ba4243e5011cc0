// Parsing of OpenAI request bodies (/v1/completions, /v1/chat/completions) into engine inputs. Errors carry
// the HTTP status and the parameter at fault, as OpenAI's error object does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/beam_search.h"
#include "engine/engine.h"
#include "engine/sampling_defaults.h"
#include "server/chat_output.h"
#include "tokenizer/chat_template.h"

namespace taco::server {

struct ApiError {
    int status = 400;
    std::string message;
    std::string param;  // "" -> null
    std::string type = "BadRequestError";
};

// {"error": {"message", "type", "param", "code"}}; `code` is the HTTP status, as vLLM sends it.
std::string error_body(const ApiError& error);

enum class Endpoint { kCompletion, kChat };

// One request as the server runs it: the engine inputs (one per prompt) and how to shape the response.
struct CompletionJob {
    Endpoint endpoint = Endpoint::kCompletion;
    std::string model;
    std::vector<GenerationInput> inputs;
    // Per input: prepended to each choice's text when echo is set (chat: the last message's content when its role is
    // the response's, as vLLM).
    std::vector<std::string> echo_texts;
    bool stream = false;
    bool include_usage = false;     // stream_options.include_usage
    bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM)
    bool echo = false;
    bool return_token_ids = false;            // vLLM: token_ids / prompt_token_ids in the choices
    bool return_tokens_as_token_ids = false;  // vLLM: logprobs name tokens "token_id:N" instead of their text
    bool want_logprobs = false;
    // vLLM's prompt_logprobs was asked for: each completion choice (the chat response) carries "prompt_logprobs".
    bool want_prompt_logprobs_field = false;
    int64_t n = 1;
    int64_t priority = 0;            // vLLM's request priority (--scheduling-policy priority)
    int64_t max_tokens = 0;          // as sampled (for vllm:request_params_max_tokens)
    std::string role = "assistant";  // chat: the reply's role (--response-role)
    std::string system_fingerprint;  // ParseContext::system_fingerprint
    ChatOutputOptions chat_output;   // chat: reasoning_content and tool_calls taken out of the reply's text
    // --enable-prompt-tokens-details: usage has prompt_tokens_details.cached_tokens (as vLLM: when any prompt token
    // came from the prefix cache).
    bool prompt_tokens_details = false;
    // use_beam_search: each input runs as a BeamSearch (engine/beam_search.h) instead of one engine request.
    std::optional<BeamSearchParams> beam_search;
};

struct StructuredOutputsConfig;  // server/structured_request.h
struct ToolServerOptions;        // server/tool_request.h

struct ParseContext {
    const Engine* engine = nullptr;
    const ChatTemplate* chat_template = nullptr;  // null: the model has none
    std::vector<std::string> model_names;         // names accepted in "model"
    SamplingDefaults defaults;                    // --generation-config: for parameters a request leaves out
    // Engine sequences one request may start (prompts x max(n, best_of)): --max-pending-requests, so a prompt list
    // cannot get past the server's pending limit (see core/limits.h).
    int64_t max_sequences_per_request = 8192;
    const StructuredOutputsConfig* structured_outputs = nullptr;  // --structured-outputs-config; null: defaults
    const ToolServerOptions* tools = nullptr;  // --enable-auto-tool-choice, --tool-call-parser, --reasoning-parser
    // --trust-request-chat-template: a request's own chat_template is rendered (else it is a 400, as vLLM).
    bool trust_request_chat_template = false;
    std::string bos_token, eos_token;         // the model's, for a request's own chat template
    std::string response_role = "assistant";  // --response-role: the role of chat replies
    std::string system_fingerprint;           // OpenAI's system_fingerprint of every reply: the build and model
    bool force_include_usage = false;         // --enable-force-include-usage: streams end with usage
    nlohmann::json default_chat_template_kwargs = nlohmann::json::object();  // under a request's own kwargs
};

// The body must already be a parsed JSON value. ordered_body (optional): the same body with its keys in the
// request's order, for the property order of structured-output schemas.
std::optional<CompletionJob> parse_completion_request(const nlohmann::json& body, const ParseContext& ctx,
                                                      ApiError& error,
                                                      const nlohmann::ordered_json* ordered_body = nullptr);
std::optional<CompletionJob> parse_chat_request(const nlohmann::json& body, const ParseContext& ctx, ApiError& error,
                                                const nlohmann::ordered_json* ordered_body = nullptr);

// Renders chat messages with the template (shared by /v1/chat/completions and /tokenize). `body` holds
// messages (assistant tool_calls, their arguments given to the template as objects as vLLM does, and tool messages'
// tool_call_id kept), tools, documents, add_generation_prompt (default true), chat_template_kwargs. ordered_body:
// the same body in the request's key order (tools reach the template as sent), or null.
// with_tools false: the template gets no tools (vLLM's --exclude-tools-when-tool-choice-none).
std::optional<std::string> render_chat(const nlohmann::json& body, const ParseContext& ctx, ApiError& error,
                                       const nlohmann::ordered_json* ordered_body = nullptr, bool with_tools = true);

// The text of one token, for logprobs: the decoded token, or "token_id:N" when the model has no tokenizer.
std::string token_text(const Tokenizer* tokenizer, int32_t token);

}  // namespace taco::server
