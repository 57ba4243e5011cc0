#include "server/api_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <random>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_util.h"
#include "core/log.h"
#include "engine/sampling_json.h"
#include "server/completion_reply.h"
#include "server/request_json.h"
#include "server/request_log.h"
#include "server/responses_reply.h"
#include "server/responses_request.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

constexpr const char* kVersion = "0.1.0";
constexpr const char* kRequestId = "X-Request-Id";
// shutdown(): how long replies aborted past the timeout get to end (the engine's step finishing, their last chunks).
constexpr std::chrono::seconds kAbortWait{5};

// 32 hex digits, as Python's uuid4().hex that vLLM sends.
std::string random_hex_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{:016x}{:016x}", rng(), rng());
}

HandlerResult error_reply(const ApiError& error, std::vector<std::pair<std::string, std::string>> headers = {}) {
    return HandlerResult{Reply{error.status, "application/json", error_body(error), std::move(headers)}, nullptr};
}

HandlerResult json_reply(const json& body) {
    return HandlerResult{Reply{200, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace), {}},
                         nullptr};
}

std::optional<json> parse_body(const HttpRequest& request, ApiError& error) {
    return parse_request_json(request.body, error);
}

// As vLLM (validate_json_request): the JSON endpoints take only a body declared as application/json, parameters
// such as charset allowed, case-insensitive. A missing Content-Type is refused too, as vLLM does: `curl -d` alone
// declares application/x-www-form-urlencoded, and a body that says it is a form should not be read as JSON.
std::optional<ApiError> check_json_content_type(const HttpRequest& request) {
    std::string media = request.header("content-type");
    media = media.substr(0, media.find(';'));
    const size_t first = media.find_first_not_of(" \t");
    const size_t last = media.find_last_not_of(" \t");
    media = first == std::string::npos ? "" : media.substr(first, last - first + 1);
    std::transform(media.begin(), media.end(), media.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (media == "application/json") return std::nullopt;
    const std::string got = request.header("content-type").empty()
                                ? "no Content-Type"
                                : "Content-Type '" + request.header("content-type") + "'";
    return ApiError{415, fmt::format("Unsupported Media Type: Only 'application/json' is allowed (got {})", got), "",
                    "BadRequestError"};
}

// OpenAI's system_fingerprint: which build serves which model, so a client can tell a changed deployment. A hash of
// the version, the served name and the model's shape.
std::string system_fingerprint(const ModelConfig& model, const std::string& name) {
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", kVersion, name, model.architecture, model.vocab_size,
                                        model.hidden_size, model.num_hidden_layers);
    uint64_t hash = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ull;
    return fmt::format("fp_{:012x}", hash & 0xffffffffffffull);
}

// /openapi.json: the routes this server answers, as an OpenAPI 3.1 document (vLLM serves FastAPI's).
json openapi_document(const std::string& root_path) {
    const std::tuple<const char*, const char*, const char*> routes[] = {
        {"/v1/completions", "post", "Completions (OpenAI)"},
        {"/v1/chat/completions", "post", "Chat completions (OpenAI)"},
        {"/v1/responses", "post", "Responses, text in and out (OpenAI)"},
        {"/v1/models", "get", "The served models"},
        {"/v1/models/{model}", "get", "One served model"},
        {"/tokenize", "post", "Tokenize a prompt or chat messages (vLLM)"},
        {"/detokenize", "post", "Detokenize token ids (vLLM)"},
        {"/invocations", "post", "SageMaker inference: chat or completion by the body"},
        {"/ping", "get", "SageMaker health check"},
        {"/health", "get", "Health check"},
        {"/load", "get", "Requests in flight"},
        {"/version", "get", "Server version"},
        {"/metrics", "get", "Prometheus metrics (vLLM's names)"},
    };
    json paths = json::object();
    for (const auto& [path, method, summary] : routes)
        paths[path][method] = {{"summary", summary},
                               {"responses", {{"200", {{"description", "Successful Response"}}}}}};
    json document = {{"openapi", "3.1.0"}, {"info", {{"title", "taco-llm"}, {"version", kVersion}}}, {"paths", paths}};
    // As FastAPI: the root path (without a trailing '/') is where a client finds these paths.
    std::string server_url = root_path;
    while (!server_url.empty() && server_url.back() == '/') server_url.pop_back();
    if (!server_url.empty()) document["servers"] = json::array({{{"url", server_url}}});
    return document;
}

// The path the routes see under --root-path, as Starlette routes under FastAPI's root_path: the prefix is taken off
// a path that starts with it and a '/', any other path is routed as it is (a proxy that strips the prefix works
// too). The root path alone is no route.
std::string route_path(const std::string& path, const std::string& root_path) {
    if (root_path.empty() || path.rfind(root_path, 0) != 0) return path;
    if (path.size() == root_path.size()) return "";
    return path[root_path.size()] == '/' ? path.substr(root_path.size()) : path;
}

}  // namespace

ApiServer::~ApiServer() {
    if (http_) http_->stop();
}

Result<std::unique_ptr<ApiServer>> ApiServer::create(Engine* engine, ApiServerOptions options) {
    auto server = std::unique_ptr<ApiServer>(new ApiServer());
    server->engine_ = engine;
    if (options.served_model_names.empty()) return error("no served model name");
    if (Status valid = options.cors.validate(); !valid) return valid;
    server->options_ = std::move(options);
    server->cors_ = CorsPolicy(server->options_.cors);
    server->created_ = int64_t(std::time(nullptr));
    const ApiServerOptions& opts = server->options_;
    auto from_dir = ChatTemplate::from_dir(opts.tokenizer_dir.empty() ? opts.model_dir : opts.tokenizer_dir);
    std::string bos, eos;
    if (from_dir) {
        for (const auto& [name, token] : from_dir->special_tokens()) {
            if (name == "bos_token") bos = token;
            if (name == "eos_token") eos = token;
        }
    }
    if (opts.chat_template) {
        auto custom = ChatTemplate::from_string(*opts.chat_template, bos, eos);
        if (!custom) return custom.status().with_context("--chat-template");
        server->chat_template_.emplace(std::move(*custom));
    } else if (from_dir && !from_dir->source().empty()) {
        server->chat_template_.emplace(std::move(*from_dir));
    }
    server->metrics_ = std::make_unique<ServerMetrics>(engine->max_model_len());
    server->context_.engine = engine;
    server->context_.chat_template = server->chat_template_ ? &*server->chat_template_ : nullptr;
    server->context_.model_names = opts.served_model_names;
    server->context_.trust_request_chat_template = opts.trust_request_chat_template;
    server->context_.bos_token = bos;
    server->context_.eos_token = eos;
    server->context_.response_role = opts.response_role;
    server->context_.force_include_usage = opts.force_include_usage;
    server->context_.default_chat_template_kwargs = opts.default_chat_template_kwargs;
    server->context_.system_fingerprint = system_fingerprint(engine->model_config(), opts.served_model_names.at(0));
    auto defaults = SamplingDefaults::load(opts.generation_config, opts.model_dir, opts.override_generation_config);
    if (!defaults) return defaults.status();
    server->context_.defaults = *defaults;
    server->context_.max_sequences_per_request = opts.max_pending_requests;
    server->context_.structured_outputs = &opts.structured_outputs;
    server->context_.tools = &opts.tools;
    if (!defaults->empty())
        log_info(
            "server: default sampling parameters from {}: {} (requests override them; "
            "--generation-config vllm ignores the file)",
            opts.override_generation_config.empty() ? "generation_config.json"
            : opts.generation_config == "vllm"      ? "--override-generation-config"
                                                    : "generation_config.json and --override-generation-config",
            defaults->describe());
    ApiServer* self = server.get();
    TACO_ASSIGN_OR_RETURN(server->http_,
                          HttpServer::create(opts.http, [self](const HttpRequest& r) { return self->handle(r); }));
    return server;
}

void ApiServer::shutdown(double timeout_s) {
    draining_ = true;
    http_->stop_accepting();
    // A handler that began before draining_ was set may still be submitting its request (its reply not yet counted
    // in in_flight_): handling_ covers it until its reply exists. One that begins after sees draining_ and refuses.
    auto wait_for_replies = [this](std::chrono::duration<double> limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (handling_.load() + in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    wait_for_replies(std::chrono::duration<double>(timeout_s));
    if (handling_.load() + in_flight_.load() > 0) {
        log_warn("server: aborting {} requests still in flight", handling_.load() + in_flight_.load());
        // Each reply aborts its engine requests at its next poll and ends as aborted (a stream's last chunks, a
        // whole reply's 503); stop() below lets the writes under way finish. Bounded: a step thread stuck in a long
        // pass cannot hold the shutdown.
        aborting_ = true;
        wait_for_replies(kAbortWait);
    }
    http_->stop();
}

bool ApiServer::authorized(const HttpRequest& request) const {
    // "<scheme> <key>" with the scheme "Bearer" in any case (vLLM, RFC 7235) and one of the keys; constant time in
    // the keys: every byte of each is compared whatever the first difference.
    const std::string header = request.header("authorization");
    const size_t space = header.find(' ');
    std::string scheme = header.substr(0, space);
    for (char& c : scheme) c = char(std::tolower(uint8_t(c)));
    const std::string got = space == std::string::npos ? "" : header.substr(space + 1);
    bool match = false;
    for (const std::string& expected : options_.api_keys) {
        unsigned diff = unsigned(got.size() != expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            diff |= unsigned(uint8_t(expected[i]) ^ uint8_t(i < got.size() ? got[i] : 0));
        match = match || diff == 0;
    }
    return scheme == "bearer" && match;
}

HandlerResult ApiServer::handle(const HttpRequest& request) {
    // Counted for shutdown() from before the draining check (in dispatch) until the reply exists.
    struct Handling {
        std::atomic<int64_t>& count;
        explicit Handling(std::atomic<int64_t>& c) : count(c) { count.fetch_add(1); }
        ~Handling() { count.fetch_sub(1); }
    } handling(handling_);
    // As vLLM, whose CORS middleware runs before its authentication (which lets OPTIONS through): a preflight needs
    // no key. Unlike vLLM, a 401 carries the CORS headers too, so a browser client can read why it was refused.
    if (auto preflight = cors_.preflight(request)) return HandlerResult{std::move(*preflight), nullptr};
    HandlerResult result = dispatch(request);
    cors_.add_response_headers(request, result.reply.headers);
    if (options_.enable_request_id_headers) {
        // As vLLM's middleware: the client's own id when it sent one. Else the id a generation endpoint put there
        // (its reply's), else a random one.
        auto& headers = result.reply.headers;
        auto found = std::find_if(headers.begin(), headers.end(), [](const auto& h) { return h.first == kRequestId; });
        if (request.has_header("x-request-id")) {
            if (found != headers.end()) headers.erase(found);
            headers.emplace_back(kRequestId, request.header("x-request-id"));
        } else if (found == headers.end()) {
            headers.emplace_back(kRequestId, random_hex_id());
        }
    }
    return result;
}

HandlerResult ApiServer::dispatch(const HttpRequest& request) {
    const std::string path = route_path(request.target.substr(0, request.target.find('?')), options_.root_path);
    if (options_.log_requests && request.method == "POST") log_info("server: {} {}", request.method, path);
    // As vLLM: the key guards the OpenAI routes (/v1/...); health, metrics, tokenize and the SageMaker routes are
    // open.
    const bool guarded = path == "/v1" || path.rfind("/v1/", 0) == 0;
    if (!options_.api_keys.empty() && guarded && !authorized(request))
        return error_reply(
            {401, "Unauthorized: a valid 'Authorization: Bearer <key>' header is required", "", "AuthenticationError"});
    auto route = [&](const char* method) -> std::optional<HandlerResult> {
        if (request.method != method)
            return error_reply(
                {405, fmt::format("{} needs {}, got {}", path, method, request.method), "", "MethodNotAllowed"});
        if (std::string(method) != "POST") return std::nullopt;
        if (auto media_error = check_json_content_type(request)) return error_reply(*media_error);
        return std::nullopt;
    };
    // The endpoint runs only once the method (and for POST the Content-Type) is right: `value_or(run())` would
    // run it, and submit its work, before returning the error.
    auto on = [&](const char* method, auto run) -> HandlerResult {
        if (auto refused = route(method)) return std::move(*refused);
        return run();
    };
    if (path == "/v1/completions") return on("POST", [&] { return completions(request, Endpoint::kCompletion); });
    if (path == "/v1/chat/completions") return on("POST", [&] { return completions(request, Endpoint::kChat); });
    if (path == "/v1/responses") return on("POST", [&] { return responses(request); });
    if (path == "/openapi.json" && !options_.disable_docs)
        return on("GET", [&] { return json_reply(openapi_document(options_.root_path)); });
    if (path == "/tokenize") return on("POST", [&] { return tokenize(request); });
    if (path == "/detokenize") return on("POST", [&] { return detokenize(request); });
    // SageMaker's one inference route: a chat request when the body has "messages", a completion when it has
    // "prompt" (vLLM tries the same two in that order).
    if (path == "/invocations") return on("POST", [&] { return invocations(request); });
    if (path == "/v1/models") return on("GET", [&] { return models(); });
    if (path.rfind("/v1/models/", 0) == 0) return on("GET", [&] { return model(path.substr(11)); });
    if (path == "/health") return HandlerResult{Reply{200, "text/plain", "", {}}, nullptr};
    // SageMaker's health check, GET or POST: 200 with no body while the server runs.
    if (path == "/ping") {
        if (request.method != "GET" && request.method != "POST")
            return error_reply(
                {405, fmt::format("/ping needs GET or POST, got {}", request.method), "", "MethodNotAllowed"});
        return HandlerResult{Reply{200, "text/plain", "", {}}, nullptr};
    }
    // vLLM's load report: the requests in flight.
    if (path == "/load") return on("GET", [&] { return json_reply({{"server_load", in_flight_.load()}}); });
    if (path == "/version") return json_reply({{"version", kVersion}});
    if (path == "/metrics") {
        std::string text = metrics_->render(engine_->stats(), engine_->cache_info(), options_.served_model_names.at(0));
        return HandlerResult{Reply{200, "text/plain; version=0.0.4", std::move(text), {}}, nullptr};
    }
    return error_reply({404, fmt::format("no route {} {}", request.method, path), "", "NotFoundError"});
}

std::optional<HandlerResult> ApiServer::refuse_when_full() const {
    // During a shutdown a keep-alive connection may still send requests: new work is refused, as uvicorn closes
    // such connections.
    if (draining_.load()) return error_reply({503, "the server is shutting down", "", "ServiceUnavailableError"});
    if (in_flight_.load() < options_.max_pending_requests) return std::nullopt;
    return error_reply(
        {503,
         fmt::format("the server is at its limit of {} requests in flight; retry later", options_.max_pending_requests),
         "", "ServiceUnavailableError"},
        {{"Retry-After", "1"}});
}

HandlerResult ApiServer::completions(const HttpRequest& request, Endpoint endpoint) {
    const auto arrival = CompletionReply::Clock::now();
    if (auto full = refuse_when_full()) return std::move(*full);
    ApiError error;
    auto body = parse_body(request, error);
    if (!body) return error_reply(error);
    // A structured-output schema's properties come in the request's key order, which the parsed body (sorted keys)
    // lost: those requests are read once more in order (the body already passed parse_json's limits).
    std::optional<nlohmann::ordered_json> ordered;
    for (const char* key : {"response_format", "guided_json", "structured_outputs", "tools", "documents"})
        if (body->contains(key) && !ordered) {
            auto reread = parse_ordered_json(request.body);
            ordered = reread ? std::move(*reread) : nlohmann::ordered_json();
        }
    const nlohmann::ordered_json* ordered_body = ordered && !ordered->is_null() ? &*ordered : nullptr;
    auto job = endpoint == Endpoint::kChat ? parse_chat_request(*body, context_, error, ordered_body)
                                           : parse_completion_request(*body, context_, error, ordered_body);
    if (!job) return error_reply(error);
    job->prompt_tokens_details = options_.enable_prompt_tokens_details;
    std::vector<std::string> logged_prompts;  // said once the reply has its id
    if (options_.log_prompts)
        for (const GenerationInput& input : job->inputs)
            logged_prompts.push_back(describe_prompt(input, options_.max_log_len));
    std::vector<std::shared_ptr<OutputStream>> streams;
    std::vector<std::shared_ptr<BeamSearch>> searches;  // use_beam_search: input i's search, streams[i] its stream
    for (GenerationInput& input : job->inputs) {
        Result<std::shared_ptr<OutputStream>> stream = Status::error("no input");
        if (job->beam_search) {
            auto search = BeamSearch::start(*engine_, std::move(input), *job->beam_search);
            if (search) searches.push_back(*search);
            stream = search ? Result<std::shared_ptr<OutputStream>>((*search)->stream()) : search.status();
        } else {
            stream = engine_->submit(std::move(input));
        }
        if (!stream) {
            for (const auto& search : searches) search->cancel();
            if (searches.empty())
                for (const auto& submitted : streams) engine_->abort(submitted->id());
            return submit_error(stream.status(), endpoint == Endpoint::kChat ? "messages" : "prompt");
        }
        streams.push_back(std::move(*stream));
    }
    job->inputs.clear();
    auto reply = std::make_shared<CompletionReply>(engine_, metrics_.get(), &in_flight_, &aborting_, std::move(*job),
                                                   std::move(streams), arrival, std::move(searches));
    for (size_t i = 0; i < logged_prompts.size(); ++i)
        log_info("server: request {}{}: {}", reply->id(), logged_prompts.size() > 1 ? fmt::format(" [{}]", i) : "",
                 logged_prompts[i]);
    HandlerResult result{{}, reply};
    if (options_.enable_request_id_headers) result.reply.headers.emplace_back(kRequestId, reply->id());
    return result;
}

HandlerResult ApiServer::submit_error(const Status& status, const std::string& prompt_param) {
    const std::string& message = status.message();
    std::string first_word = message.substr(0, message.find(' '));
    if (!first_word.empty() && first_word.back() == ':') first_word.pop_back();
    std::string param = is_sampling_key(first_word) ? first_word : "";
    // Chat asks for top logprobs with top_logprobs (the engine's "logprobs").
    if (param == "logprobs" && prompt_param == "messages")
        return error_reply(
            {400, "top_logprobs" + message.substr(first_word.size()), "top_logprobs", "BadRequestError"});
    // Engine errors about the prompt itself (too long for the context, empty, ids outside the vocabulary).
    if (message.rfind("the prompt", 0) == 0 || message.rfind("prompt token", 0) == 0) param = prompt_param;
    return error_reply({400, message, param, "BadRequestError"});
}

HandlerResult ApiServer::responses(const HttpRequest& request) {
    if (auto full = refuse_when_full()) return std::move(*full);
    ApiError error;
    auto body = parse_body(request, error);
    if (!body) return error_reply(error);
    ResponsesEcho echo;
    auto chat = responses_to_chat(*body, echo, error);
    if (!chat) return error_reply(error);
    auto job = parse_chat_request(*chat, context_, error);
    if (!job) {
        // The chat request's field names, back in the Responses API's.
        const std::pair<const char*, const char*> renamed[] = {
            {"max_tokens", "max_output_tokens"}, {"messages", "input"}, {"reasoning_effort", "reasoning"}};
        for (const auto& [chat_name, responses_name] : renamed)
            if (error.param == chat_name) error.param = responses_name;
        return error_reply(error);
    }
    const std::string logged_prompt =
        options_.log_prompts ? describe_prompt(job->inputs.at(0), options_.max_log_len) : "";
    auto stream = engine_->submit(std::move(job->inputs.at(0)));
    if (!stream) return submit_error(stream.status(), "input");
    job->inputs.clear();
    auto reply = std::make_shared<ResponsesReply>(engine_, metrics_.get(), &in_flight_, &aborting_, std::move(*job),
                                                  std::move(echo), std::move(*stream));
    if (options_.log_prompts) log_info("server: request {}: {}", reply->id(), logged_prompt);
    HandlerResult result{{}, reply};
    if (options_.enable_request_id_headers) result.reply.headers.emplace_back(kRequestId, reply->id());
    return result;
}

HandlerResult ApiServer::invocations(const HttpRequest& request) {
    ApiError error;
    auto body = parse_body(request, error);
    if (!body) return error_reply(error);
    if (body->is_object() && body->contains("messages")) return completions(request, Endpoint::kChat);
    if (body->is_object() && body->contains("prompt")) return completions(request, Endpoint::kCompletion);
    return error_reply({400,
                        "/invocations takes a chat request (with \"messages\") or a completion request (with "
                        "\"prompt\")",
                        ""});
}

HandlerResult ApiServer::tokenize(const HttpRequest& request) {
    ApiError error;
    auto body = parse_body(request, error);
    if (!body) return error_reply(error);
    if (!body->is_object()) return error_reply({400, "the request body must be a JSON object", ""});
    const Tokenizer* tokenizer = engine_->tokenizer();
    if (!tokenizer) return error_reply({400, "this model has no tokenizer", ""});
    std::string text;
    bool add_special = !body->contains("messages");
    if (body->contains("add_special_tokens")) {
        if (!body->at("add_special_tokens").is_boolean())
            return error_reply({400, "'add_special_tokens' must be true or false", "add_special_tokens"});
        add_special = body->at("add_special_tokens").get<bool>();
    }
    if (body->contains("messages")) {
        auto rendered = render_chat(*body, context_, error);
        if (!rendered) return error_reply(error);
        text = *rendered;
    } else if (body->contains("prompt") && body->at("prompt").is_string()) {
        text = body->at("prompt").get<std::string>();
    } else {
        return error_reply({400, "'prompt' (a string) or 'messages' is required", "prompt"});
    }
    auto ids = tokenizer->encode(text, add_special);
    if (!ids) return error_reply({400, ids.status().message(), "prompt"});
    json out = {
        {"count", ids->size()}, {"max_model_len", engine_->max_model_len()}, {"tokens", *ids}, {"token_strs", nullptr}};
    bool return_token_strs = false;
    if (body->contains("return_token_strs") && !body->at("return_token_strs").is_null()) {
        if (!body->at("return_token_strs").is_boolean())
            return error_reply({400, "'return_token_strs' must be true or false", "return_token_strs"});
        return_token_strs = body->at("return_token_strs").get<bool>();
    }
    if (return_token_strs) {
        json strs = json::array();
        for (int32_t id : *ids) strs.push_back(tokenizer->id_to_token(id).value_or(""));
        out["token_strs"] = strs;
    }
    return json_reply(out);
}

HandlerResult ApiServer::detokenize(const HttpRequest& request) {
    ApiError error;
    auto body = parse_body(request, error);
    if (!body) return error_reply(error);
    const Tokenizer* tokenizer = engine_->tokenizer();
    if (!tokenizer) return error_reply({400, "this model has no tokenizer", ""});
    if (!body->is_object() || !body->contains("tokens") || !body->at("tokens").is_array())
        return error_reply({400, "'tokens' (a list of token ids) is required", "tokens"});
    std::vector<int32_t> ids;
    for (const json& id : body->at("tokens")) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tokenizer->vocab_size())
            return error_reply(
                {400, fmt::format("'tokens' holds {}, which is not a token id", json_excerpt(id)), "tokens"});
        ids.push_back(id.get<int32_t>());
    }
    return json_reply({{"prompt", tokenizer->decode(ids, false)}});
}

json ApiServer::model_card(const std::string& name) const {
    return {{"id", name},
            {"object", "model"},
            {"created", created_},
            {"owned_by", "taco-llm"},
            {"root", options_.model_dir},
            {"parent", nullptr},
            {"max_model_len", engine_->max_model_len()},
            {"permission", json::array()}};
}

HandlerResult ApiServer::models() const {
    json data = json::array();
    for (const std::string& name : options_.served_model_names) data.push_back(model_card(name));
    return json_reply({{"object", "list"}, {"data", data}});
}

namespace {

// A path segment with its %XX escapes decoded (clients encode the '/' of "org/name" ids); a malformed escape is kept
// as it is, and then matches no model.
std::string percent_decoded(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(uint8_t(s[i + 1])) && std::isxdigit(uint8_t(s[i + 2]))) {
            out.push_back(char(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

}  // namespace

// GET /v1/models/{id} (the OpenAI client's models.retrieve): one served name's card, or 404 naming it.
HandlerResult ApiServer::model(const std::string& encoded_id) const {
    const std::string id = percent_decoded(encoded_id);
    for (const std::string& name : options_.served_model_names)
        if (name == id) return json_reply(model_card(name));
    return error_reply({404, fmt::format("The model `{}` does not exist.", id), "model", "NotFoundError"});
}

}  // namespace taco::server
