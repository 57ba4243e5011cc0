// ApiServer: the OpenAI-compatible HTTP API (vLLM's routes and shapes) over an Engine. Routes:
// POST /v1/completions, POST /v1/chat/completions, POST /v1/responses, GET /v1/models, GET /v1/models/{id},
// GET /health, GET /version, GET /metrics, GET /load, GET|POST /ping, POST /invocations, GET /openapi.json,
// POST /tokenize, POST /detokenize. With an API key the /v1/* routes need "Authorization: Bearer KEY".
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/structured_request.h"
#include "server/tool_request.h"
#include "tokenizer/chat_template.h"

namespace taco::server {

struct ApiServerOptions {
    std::string model_dir;                        // generation_config.json and /v1/models' root
    std::string tokenizer_dir;                    // --tokenizer: the chat template's folder (empty: model_dir)
    std::vector<std::string> served_model_names;  // the first is reported; all are accepted in "model"
    std::vector<std::string> api_keys;            // any of them authorizes; none = no auth
    std::optional<std::string> chat_template;     // template source overriding the model's own
    bool trust_request_chat_template = false;     // --trust-request-chat-template: requests may bring their own
    std::string response_role = "assistant";      // --response-role
    std::string generation_config = "auto";       // vLLM's --generation-config: "auto", "vllm" or a folder
    int64_t max_pending_requests = 8192;          // requests in flight beyond this get 503
    bool log_requests = true;                     // a line per POST
    bool log_prompts = false;                     // --enable-log-requests: a generation request's id and prompts
    std::optional<int64_t> max_log_len;           // --max-log-len: characters (token ids) of a logged prompt
    bool enable_prompt_tokens_details = false;    // --enable-prompt-tokens-details: usage's cached_tokens
    // --root-path: the prefix a proxy may leave on paths (vLLM's FastAPI root_path): "/api/v1/models" is routed as
    // "/v1/models", unprefixed paths still are, and /openapi.json names it in "servers".
    std::string root_path;
    bool disable_docs = false;                                               // --disable-fastapi-docs: no /openapi.json
    bool force_include_usage = false;                                        // --enable-force-include-usage
    nlohmann::json default_chat_template_kwargs = nlohmann::json::object();  // --default-chat-template-kwargs
    StructuredOutputsConfig structured_outputs;  // --structured-outputs-config / --guided-decoding-backend
    ToolServerOptions tools;                     // --enable-auto-tool-choice, --tool-call-parser, --reasoning-parser
    CorsOptions cors;                            // --allowed-origins, --allowed-methods, --allowed-headers, ...
    // --enable-request-id-headers: every response carries X-Request-Id (the client's, else the reply's id, else a
    // random one).
    bool enable_request_id_headers = false;
    // vLLM's --override-generation-config: an object of sampling keys laid over generation_config's (null: none).
    nlohmann::json override_generation_config;
    HttpServerOptions http;
};

class ApiServer {
public:
    // `engine` must outlive the server. Binds the port (options.http.port 0 = ephemeral).
    static Result<std::unique_ptr<ApiServer>> create(Engine* engine, ApiServerOptions options);
    ~ApiServer();

    void start() { http_->start(); }
    // Stops accepting connections and refuses new generation requests on open ones (503); waits up to `timeout_s`
    // for the requests in flight to finish, then aborts the rest, which end as vLLM ends them (streams: a last chunk
    // with finish_reason "abort", then [DONE]; whole replies: a 503), and stops.
    void shutdown(double timeout_s);
    // Stops accepting, closes connections and aborts the requests still in flight.
    void stop() { http_->stop(); }
    int port() const { return http_->port(); }
    int64_t num_in_flight() const { return in_flight_.load(); }

    // Every request: a CORS preflight is answered at once; any other is routed, then gets the CORS headers.
    HandlerResult handle(const HttpRequest& request);

private:
    HandlerResult dispatch(const HttpRequest& request);
    ApiServer() = default;
    HandlerResult completions(const HttpRequest& request, Endpoint endpoint);
    HandlerResult tokenize(const HttpRequest& request);
    HandlerResult detokenize(const HttpRequest& request);
    HandlerResult invocations(const HttpRequest& request);
    HandlerResult responses(const HttpRequest& request);
    // A 503 with Retry-After while max_pending_requests requests are in flight, else nothing.
    std::optional<HandlerResult> refuse_when_full() const;
    // The engine error of a submit as a 400 (param: the sampling key it names, or `prompt_param` for the prompt).
    static HandlerResult submit_error(const Status& status, const std::string& prompt_param);
    HandlerResult models() const;
    HandlerResult model(const std::string& encoded_id) const;
    nlohmann::json model_card(const std::string& name) const;
    bool authorized(const HttpRequest& request) const;

    Engine* engine_ = nullptr;
    ApiServerOptions options_;
    CorsPolicy cors_;
    std::optional<ChatTemplate> chat_template_;
    ParseContext context_;
    std::unique_ptr<ServerMetrics> metrics_;
    std::atomic<int64_t> in_flight_{0};
    // Handler calls under way: a generation request's reply counts in in_flight_ only once its handler has submitted
    // it, so shutdown() also waits for these (a request handled as the drain began would otherwise be cut).
    std::atomic<int64_t> handling_{0};
    std::atomic<bool> draining_{false};  // shutdown() started: new generation requests are refused
    std::atomic<bool> aborting_{false};  // shutdown() gave up waiting: live replies abort their requests
    int64_t created_ = 0;
    std::unique_ptr<HttpServer> http_;  // last: stopped before anything it calls into goes away
};

}  // namespace taco::server
