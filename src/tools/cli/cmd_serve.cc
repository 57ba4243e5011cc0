// `taco_llm serve MODEL [vLLM's flags]`: the OpenAI-compatible HTTP server. Flag names and defaults follow
// `vllm serve`, so pasted vLLM command lines work (with dashes or underscores: main.cc). vLLM flags that only tune
// vLLM's Python internals are accepted as no-ops with a one-line warning (listed in --help with the reason); a flag
// whose feature does not exist here (LoRA, pipeline or data parallelism, ...) is an error naming it; any other flag
// is an error naming it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <thread>

#include "core/file_util.h"
#include "core/json_util.h"
#include "core/log.h"
#include "engine/engine.h"
#include "engine/sampling_defaults.h"
#include "server/api_server.h"
#include "server/hf_cache.h"
#include "server/open_file_limit.h"
#include "tools/cli/command.h"
#include "tools/cli/demo_model.h"
#include "tools/cli/engine_flags.h"
#include "tools/cli/hf_overrides.h"
#include "tools/cli/model_source.h"

namespace taco::cli {
namespace {

struct ServeArgs {
    EngineConfig engine;
    std::string model_flag;   // --model, vLLM's older spelling of the positional
    std::string config_file;  // --config: expanded into flags before parsing (main.cc)
    server::ApiServerOptions server;
    std::vector<std::string> served_model_names;
    std::string chat_template;
    std::string generation_config = "auto";
    std::string revision;      // of a hub id
    std::string download_dir;  // the hub cache to look in and download to
    int64_t tensor_parallel_size = 1;
    bool disable_log_requests = false;
    int num_io_threads = 2;
    std::string structured_outputs_config;  // vLLM's --structured-outputs-config JSON
    std::string guided_decoding_backend;    // vLLM's older --guided-decoding-backend
    std::string tool_call_parser;           // --tool-call-parser NAME
    std::string reasoning_parser;           // --reasoning-parser NAME
    double shutdown_timeout_s = 5;
    std::string tokenizer;                       // --tokenizer: a folder or hub id (default: the model's own)
    std::string tokenizer_mode = "auto";         // --tokenizer-mode: auto, hf or slow (the HF tokenizer files)
    std::string tokenizer_revision;              // --tokenizer-revision: of a hub id (default: --revision)
    double cpu_offload_gb = 0;                   // --cpu-offload-gb: 0 only
    std::string distributed_executor_backend;    // --distributed-executor-backend: accepted, no effect
    std::string task = "auto", runner = "auto";  // --task / --runner: generation only
    int64_t data_parallel_size = 1, pipeline_parallel_size = 1;
    std::string quantization;  // -q / --quantization: none only
    std::string chat_template_content_format = "auto";
    std::string default_chat_template_kwargs;  // JSON object
    std::string override_generation_config;    // JSON object
    std::string hf_overrides;                  // JSON object
    std::string hf_token;
    bool enable_log_requests = false;
    bool disable_access_log = false;         // --disable-uvicorn-access-log
    std::string uvicorn_log_level = "info";  // --uvicorn-log-level: above info, no access lines
    std::optional<int64_t> max_log_len;      // --max-log-len
    // CORS, as vLLM: JSON lists of strings.
    std::string allowed_origins = R"(["*"])", allowed_methods = R"(["*"])", allowed_headers = R"(["*"])";
};

// A flag's JSON list of strings (vLLM's --allowed-origins '["https://a.example"]'), or an error naming the flag.
std::vector<std::string> json_string_list(const char* flag, const std::string& text) {
    auto value = parse_json(text);
    bool strings = value && value->is_array();
    for (size_t i = 0; strings && i < value->size(); ++i) strings = value->at(i).is_string();
    if (!strings) fail(fmt::format("{} must be a JSON list of strings, e.g. '[\"*\"]', got '{}'", flag, text));
    return value->get<std::vector<std::string>>();
}

// vLLM flags of features taco-llm does not have: an error naming the flag, before anything loads.
struct UnsupportedFlag {
    const char* name;
    bool has_value;
    const char* why;
};
constexpr UnsupportedFlag kUnsupportedFlags[] = {
    {"--enable-lora", false, "LoRA adapters are not implemented yet"},
    {"--lora-modules", true, "LoRA adapters are not implemented yet"},
    {"--max-loras", true, "LoRA adapters are not implemented yet"},
    {"--max-lora-rank", true, "LoRA adapters are not implemented yet"},
    {"--limit-mm-per-prompt", true, "multimodal models are not implemented yet"},
    {"--speculative-config", true, "speculative decoding is not configurable yet"},
    {"--enable-ssl-refresh", false,
     "reloading TLS certificates while serving is not implemented; restart the server to use new files"},
};

// vLLM flags that only tune vLLM's own machinery (Python processes, torch.compile, its scheduler's prefill
// grouping): accepted with a warning and listed in --help with the reason they change nothing here.
struct NoOpFlag {
    const char* name;
    bool has_value;
    const char* why;
};
constexpr NoOpFlag kNoOpFlags[] = {
    {"--trust-remote-code", false, "no code from model repositories runs here; every architecture is built in"},
    {"--disable-log-stats", false, "no periodic statistics are logged here (they are served at /metrics)"},
    {"--disable-custom-all-reduce", false, "it tunes vLLM's multi-GPU all-reduce; there is no tensor parallelism here"},
    {"--disable-frontend-multiprocessing", false, "it tunes vLLM's Python processes; server and engine share one here"},
    {"--compilation-config", true,
     "it configures torch.compile; CUDA graphs are set with --cuda-graph-sizes and --enforce-eager"},
    {"--max-seq-len-to-capture", true, "the CUDA graphs here serve decode steps of every sequence length"},
};

std::atomic<int> g_signal{0};
extern "C" void on_signal(int signal) { g_signal.store(signal); }

void run_serve(ServeArgs& args) {
    std::string& model = args.engine.model_dir;
    if (model.empty()) model = args.model_flag;
    const bool demo = model.empty();
    if (demo) {
        auto dir = find_demo_model();
        if (!dir) fail(dir.status().message());
        model = *dir;
    }
    // The name the API reports by default: MODEL as given, or "demo" for the built-in model.
    const std::string model_arg = demo ? std::string("demo") : model;
    // vLLM's auto, hf and slow all read the Hugging Face tokenizer files, which is what the tokenizer here does.
    if (args.tokenizer_mode != "auto" && args.tokenizer_mode != "hf" && args.tokenizer_mode != "slow")
        fail(
            fmt::format("--tokenizer-mode {}: only auto, hf and slow (the Hugging Face tokenizer files) are supported; "
                        "mistral_common and custom tokenizers are not",
                        args.tokenizer_mode));
    if (args.cpu_offload_gb != 0)
        fail(
            fmt::format("--cpu-offload-gb {}: offloading weights to CPU memory is not implemented; only 0 is supported",
                        args.cpu_offload_gb));
    const std::string_view backend = args.distributed_executor_backend;
    if (!backend.empty() && backend != "mp" && backend != "ray" && backend != "uni" && backend != "external_launcher")
        fail(fmt::format("--distributed-executor-backend {}: expected mp, ray, uni or external_launcher",
                         args.distributed_executor_backend));
    for (const auto& [flag, value] :
         {std::pair<const char*, std::string>{"--task", args.task}, {"--runner", args.runner}})
        if (value != "auto" && value != "generate")
            fail(fmt::format("{} {}: only text generation ('generate') is supported", flag, value));
    if (args.data_parallel_size != 1)
        fail(fmt::format("--data-parallel-size {}: data parallelism is not implemented; only 1 is supported",
                         args.data_parallel_size));
    if (args.pipeline_parallel_size != 1)
        fail(fmt::format("--pipeline-parallel-size {}: pipeline parallelism is not implemented; only 1 is supported",
                         args.pipeline_parallel_size));
    if (!args.quantization.empty() && args.quantization != "none")
        fail(fmt::format("--quantization {}: quantized checkpoints are not supported yet", args.quantization));
    if (args.chat_template_content_format != "auto" && args.chat_template_content_format != "string")
        fail(
            fmt::format("--chat-template-content-format {}: only 'auto' and 'string' (text parts joined) are "
                        "supported",
                        args.chat_template_content_format));
    if (!args.default_chat_template_kwargs.empty()) {
        auto kwargs = parse_json(args.default_chat_template_kwargs);
        if (!kwargs || !kwargs->is_object())
            fail("--default-chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
        args.server.default_chat_template_kwargs = *kwargs;
    }
    if (!args.override_generation_config.empty()) {
        auto overrides = parse_json(args.override_generation_config);
        if (!overrides)
            fail(fmt::format("--override-generation-config is not valid JSON: {}", overrides.status().message()));
        args.server.override_generation_config = *overrides;
        // Checked now, before the model loads (the server checks it again with the model's file).
        auto checked = SamplingDefaults::load("vllm", "", *overrides);
        if (!checked) fail(checked.status().message());
    }
    if (!args.hf_token.empty()) setenv("HF_TOKEN", args.hf_token.c_str(), 1);  // read by the hub downloader
    if (args.tensor_parallel_size != 1)
        fail(
            fmt::format("--tensor-parallel-size {}: tensor parallelism is not implemented in this build; only 1 is "
                        "supported",
                        args.tensor_parallel_size));
    // Flags checked before any download or load: a server that starts must be able to serve.
    if (args.server.max_pending_requests < 1)
        fail(fmt::format("--max-pending-requests must be at least 1, got {}", args.server.max_pending_requests));
    for (const std::string& key : args.server.api_keys)
        if (key.empty()) fail("--api-key: an empty key would authorize a bare 'Bearer' header; give a non-empty key");
    if (!(args.shutdown_timeout_s >= 0 && args.shutdown_timeout_s <= 86400))
        fail(fmt::format("--shutdown-timeout must be in [0, 86400] seconds, got {}", args.shutdown_timeout_s));
    if (!args.structured_outputs_config.empty()) {
        auto config = server::StructuredOutputsConfig::from_json_text(args.structured_outputs_config);
        if (!config) fail(config.status().message());
        args.server.structured_outputs = *config;
    }
    if (!args.guided_decoding_backend.empty()) {
        if (Status s = server::StructuredOutputsConfig::check_backend(args.guided_decoding_backend); !s)
            fail(fmt::format("--guided-decoding-backend: {}", s.message()));
        args.server.structured_outputs.backend = args.guided_decoding_backend;
    }
    if (!args.tool_call_parser.empty()) {
        auto format = server::tool_call_format(args.tool_call_parser);
        if (!format) fail(format.status().message());
        args.server.tools.tool_call_parser = *format;
    }
    if (args.server.tools.enable_auto_tool_choice && !args.server.tools.tool_call_parser)
        fail("--enable-auto-tool-choice needs --tool-call-parser NAME (hermes, llama3_json, mistral, pythonic)");
    if (!args.reasoning_parser.empty()) {
        auto format = server::reasoning_format(args.reasoning_parser);
        if (!format) fail(format.status().message());
        args.server.tools.reasoning_parser = *format;
    }
    args.server.cors.allowed_origins = json_string_list("--allowed-origins", args.allowed_origins);
    args.server.cors.allowed_methods = json_string_list("--allowed-methods", args.allowed_methods);
    args.server.cors.allowed_headers = json_string_list("--allowed-headers", args.allowed_headers);
    if (Status valid = args.server.cors.validate(); !valid) fail(valid.message());
    if (Status valid = args.server.http.tls.validate(); !valid) fail(valid.message());
    for (const std::string* file :
         {&args.server.http.tls.certfile, &args.server.http.tls.keyfile, &args.server.http.tls.ca_certs})
        if (!file->empty() && !std::filesystem::is_regular_file(*file)) fail(fmt::format("{}: no such file", *file));
    if (Status valid = args.engine.validate(); !valid) fail(valid.message());
    // A revision picks a hub snapshot: a local folder has none, so asking for one is a mistake worth naming.
    if (!args.revision.empty() && std::filesystem::is_directory(model))
        fail(fmt::format("--revision {}: {} is a local folder, which has no revisions (leave the flag out)",
                         args.revision, model));
    // vLLM's --tokenizer: a folder or hub id whose tokenizer and chat template are used instead of the model's;
    // --tokenizer-revision (default: --revision) picks its hub snapshot.
    const std::string tokenizer = args.tokenizer.empty() ? model : args.tokenizer;
    const std::string& tokenizer_revision = args.tokenizer_revision.empty() ? args.revision : args.tokenizer_revision;
    if (!args.tokenizer_revision.empty() && std::filesystem::is_directory(tokenizer))
        fail(
            fmt::format("--tokenizer-revision {}: the tokenizer {} is a local folder, which has no revisions (leave "
                        "the flag out)",
                        args.tokenizer_revision, tokenizer));
    const std::string model_source = model;
    model = resolve_model_or_fail(model, args.revision, args.download_dir);
    if (!args.tokenizer.empty() || tokenizer_revision != args.revision) {
        if (!std::filesystem::is_directory(tokenizer) && !server::is_hub_id(tokenizer))
            fail(fmt::format("--tokenizer {}: no such folder (and not a hub id like org/name)", tokenizer));
        args.engine.tokenizer_dir = tokenizer == model_source && tokenizer_revision == args.revision
                                        ? model
                                        : resolve_model_or_fail(tokenizer, tokenizer_revision, args.download_dir);
        args.server.tokenizer_dir = args.engine.tokenizer_dir;
    }
    if (args.generation_config != "auto" && args.generation_config != "vllm" &&
        !std::filesystem::is_directory(args.generation_config))
        fail(fmt::format("--generation-config {}: expected 'auto', 'vllm' or a folder", args.generation_config));

    server::ApiServerOptions& options = args.server;
    options.model_dir = model;
    options.served_model_names =
        args.served_model_names.empty() ? std::vector<std::string>{model_arg} : args.served_model_names;
    if (args.enable_log_requests && args.disable_log_requests)
        fail("--enable-log-requests and --disable-log-requests contradict each other; give one");
    // The line per request is our uvicorn access log: uvicorn logs it at info, so a level above that drops it.
    const std::string& level = args.uvicorn_log_level;
    if (level != "critical" && level != "error" && level != "warning" && level != "info" && level != "debug" &&
        level != "trace")
        fail(fmt::format("--uvicorn-log-level {}: expected critical, error, warning, info, debug or trace", level));
    const bool access_level = level == "info" || level == "debug" || level == "trace";
    options.log_requests = !args.disable_log_requests && !args.disable_access_log && access_level;
    options.log_prompts = args.enable_log_requests;
    if (args.max_log_len) {
        if (*args.max_log_len < 0) fail(fmt::format("--max-log-len must be at least 0, got {}", *args.max_log_len));
        options.max_log_len = args.max_log_len;
    }
    if (!options.root_path.empty() && options.root_path.front() != '/')
        fail(fmt::format("--root-path '{}' must start with '/' (the prefix of the paths, e.g. /api)",
                         options.root_path));
    options.generation_config = args.generation_config;
    options.http.num_threads = args.num_io_threads;
    if (options.api_keys.empty()) {
        for (const char* name : {"VLLM_API_KEY", "TACO_LLM_API_KEY"})
            if (const char* value = std::getenv(name); value && *value) options.api_keys = {value};
    }
    if (!args.chat_template.empty()) {
        if (std::filesystem::is_regular_file(args.chat_template)) {
            auto text = read_text_file(args.chat_template);
            if (!text) fail(text.status().message());
            options.chat_template = *text;
        } else {
            options.chat_template = args.chat_template;  // an inline template, as vLLM accepts
        }
    }

    args.engine.show_load_progress = true;
    auto engine = create_engine_with_hf_overrides(args.engine, args.hf_overrides);
    auto server = server::ApiServer::create(engine.get(), options);
    if (!server) fail(server.status().message());
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGPIPE, SIG_IGN);
    // Each connection holds a file descriptor: thousands of streams need more than the usual soft limit of 1024.
    if (const int64_t fds = server::raise_open_file_limit(); fds >= 0 && fds < 4096)
        log_warn("serve: at most {} open files (ulimit -n): connections beyond about that many will fail", fds);
    (*server)->start();
    std::printf("taco-llm serving %s on %s://%s:%d\n", model_arg.c_str(), options.http.tls.enabled() ? "https" : "http",
                options.http.host.c_str(), (*server)->port());
    std::fflush(stdout);
    while (g_signal.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log_info("serve: signal {}: no new connections; waiting up to {} s for requests in flight", g_signal.load(),
             args.shutdown_timeout_s);
    (*server)->shutdown(args.shutdown_timeout_s);
    server->reset();
    engine.reset();
}

const CommandRegistrar registrar(15, [](CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (vLLM's routes and flags)");
    sub->add_option("model", args->engine.model_dir, "Model folder or hub id (default: the built-in demo model)");
    sub->add_option("--model", args->model_flag, "Same as the positional MODEL");
    // Read by main.cc before parsing (config_file.h); declared here for --help and as a known flag.
    sub->add_option("--config", args->config_file,
                    "YAML file of flags, as vLLM's: keys are flag names without dashes (max_model_len: 4096), values "
                    "scalars, lists or true/false; flags on the command line win");
    sub->add_option("--host", args->server.http.host, "Address to listen on")->capture_default_str();
    sub->add_option("--port", args->server.http.port, "Port to listen on (0: any free port)")->capture_default_str();
    // One key per flag, repeated for several: a list after one flag would swallow a model named after it.
    sub->add_option("--api-key", args->server.api_keys,
                    "Require 'Authorization: Bearer KEY' on /v1/*; repeat the flag for several keys, any of which "
                    "authorizes (default: $VLLM_API_KEY or $TACO_LLM_API_KEY)")
        ->allow_extra_args(false);
    sub->add_option("--served-model-name", args->served_model_names,
                    "Model name(s) in the API; the first is reported (default: MODEL as given)");
    sub->add_option("--chat-template", args->chat_template, "Chat template: a file, or the template itself");
    sub->add_option("--generation-config", args->generation_config,
                    "Default sampling parameters: 'auto' (the model's generation_config.json), 'vllm' (none) or a "
                    "folder")
        ->capture_default_str();
    sub->add_option("--hf-overrides", args->hf_overrides,
                    "JSON object merged into the model's config.json before the model is built (nested objects "
                    "merge), e.g. '{\"max_position_embeddings\": 4096}'");
    sub->add_option("--override-generation-config", args->override_generation_config,
                    "JSON object laid over the --generation-config defaults (alone with 'vllm'): temperature, top_p, "
                    "top_k, min_p, repetition_penalty, max_new_tokens (the default max_tokens); a request's own "
                    "values win");
    sub->add_option("--revision", args->revision, "Branch, tag or commit of a hub id (default: main)");
    sub->add_option(
        "--download-dir", args->download_dir,
        "Hugging Face cache folder for hub ids (default: $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)");
    sub->add_option("--tensor-parallel-size", args->tensor_parallel_size, "Devices to shard over")
        ->capture_default_str();
    sub->add_option("--max-pending-requests", args->server.max_pending_requests,
                    "Requests in flight beyond this get 503 with Retry-After")
        ->capture_default_str();
    sub->add_flag("--disable-log-requests", args->disable_log_requests, "Do not log a line per POST request");
    sub->add_flag("--disable-uvicorn-access-log", args->disable_access_log,
                  "Do not log a line per POST request (vLLM's uvicorn access log)");
    sub->add_option("--uvicorn-log-level", args->uvicorn_log_level,
                    "critical, error, warning, info, debug or trace: above info, no line per request")
        ->capture_default_str();
    sub->add_option("--shutdown-timeout", args->shutdown_timeout_s,
                    "Seconds to let requests in flight finish after SIGINT/SIGTERM before aborting them (streams then "
                    "end with finish_reason \"abort\" and [DONE], other requests with a 503)")
        ->capture_default_str();
    sub->add_option("--io-threads", args->num_io_threads, "HTTP I/O threads")->capture_default_str();
    sub->add_option("--structured-outputs-config", args->structured_outputs_config,
                    "JSON: backend (every vLLM backend name runs the built-in matcher), disable_any_whitespace, "
                    "disable_additional_properties, disable_fallback");
    sub->add_option("--guided-decoding-backend", args->guided_decoding_backend,
                    "vLLM's older flag for the structured-output backend (any name runs the built-in matcher)");
    sub->add_flag("--enable-auto-tool-choice", args->server.tools.enable_auto_tool_choice,
                  "Let the model call tools on its own (tool_choice \"auto\"); needs --tool-call-parser");
    sub->add_option("--tool-call-parser", args->tool_call_parser,
                    "How tool calls are read from the model's text: hermes (Qwen2.5, Qwen3), llama3_json (Llama 3.1, "
                    "3.2), mistral, pythonic");
    sub->add_flag("--exclude-tools-when-tool-choice-none", args->server.tools.exclude_tools_when_tool_choice_none,
                  "Render no tools into the prompt when a request's tool_choice is \"none\"");
    sub->add_option("--reasoning-parser", args->reasoning_parser,
                    "Split <think>...</think> into reasoning_content: deepseek_r1, qwen3");
    sub->add_flag("--trust-request-chat-template", args->server.trust_request_chat_template,
                  "Render a request's own chat_template (else such a request is refused with a 400)");
    sub->add_option("--response-role", args->server.response_role, "The role of chat replies")->capture_default_str();
    sub->add_flag("--enable-log-requests", args->enable_log_requests,
                  "Also log each generation request's id and prompt (cut to --max-log-len)");
    sub->add_option("--max-log-len", args->max_log_len,
                    "Characters (or token ids) of a prompt that --enable-log-requests logs (default: all)");
    sub->add_flag("--enable-prompt-tokens-details", args->server.enable_prompt_tokens_details,
                  "usage.prompt_tokens_details.cached_tokens: the prompt tokens served from the prefix cache");
    sub->add_option("--root-path", args->server.root_path,
                    "Path prefix the server is mounted under behind a proxy: /PREFIX/v1/... is routed as /v1/... "
                    "(unprefixed paths too), and /openapi.json lists it in servers");
    sub->add_flag("--disable-fastapi-docs", args->server.disable_docs, "Do not serve /openapi.json");
    sub->add_flag("--enable-force-include-usage", args->server.force_include_usage,
                  "Every streamed reply ends with a usage chunk, as if stream_options.include_usage were set");
    sub->add_option("--tokenizer", args->tokenizer,
                    "Folder or hub id whose tokenizer files and chat template are used (default: MODEL's own)");
    sub->add_option("--tokenizer-mode", args->tokenizer_mode,
                    "auto, hf or slow: the Hugging Face tokenizer files (mistral and custom: an error)")
        ->capture_default_str();
    sub->add_option("--tokenizer-revision", args->tokenizer_revision,
                    "Branch, tag or commit of a hub id given as --tokenizer (default: --revision)");
    sub->add_option("--cpu-offload-gb", args->cpu_offload_gb, "Weights offloaded to CPU memory, GiB (0 only)")
        ->capture_default_str();
    sub->add_option("--task", args->task, "vLLM's task: auto or generate")->capture_default_str();
    sub->add_option("--runner", args->runner, "vLLM's runner: auto or generate")->capture_default_str();
    sub->add_option("--data-parallel-size", args->data_parallel_size, "Data-parallel replicas (1 only)")
        ->capture_default_str();
    sub->add_option("--pipeline-parallel-size", args->pipeline_parallel_size, "Pipeline stages (1 only)")
        ->capture_default_str();
    sub->add_option("--quantization,-q", args->quantization, "Quantization method: none only (for now)");
    sub->add_option("--chat-template-content-format", args->chat_template_content_format,
                    "How message content reaches the template: auto or string (text parts joined with newlines)")
        ->capture_default_str();
    sub->add_option("--default-chat-template-kwargs", args->default_chat_template_kwargs,
                    "JSON object of chat-template variables for every request (a request's chat_template_kwargs win)");
    sub->add_option("--allowed-origins", args->allowed_origins,
                    "CORS: JSON list of the origins whose browser pages may call the API (\"*\": any)")
        ->capture_default_str();
    sub->add_option("--allowed-methods", args->allowed_methods, "CORS: JSON list of the methods allowed (\"*\": any)")
        ->capture_default_str();
    sub->add_option("--allowed-headers", args->allowed_headers,
                    "CORS: JSON list of the request headers allowed (\"*\": any)")
        ->capture_default_str();
    sub->add_flag("--allow-credentials", args->server.cors.allow_credentials,
                  "CORS: allow credentials (cookies, Authorization) on cross-origin requests");
    sub->add_flag("--enable-request-id-headers", args->server.enable_request_id_headers,
                  "Responses carry X-Request-Id: the request's own X-Request-Id, else the reply's id");
    sub->add_option("--ssl-certfile", args->server.http.tls.certfile,
                    "Serve HTTPS: the server's PEM certificate chain (its key too when --ssl-keyfile is not given)");
    sub->add_option("--ssl-keyfile", args->server.http.tls.keyfile, "HTTPS: the PEM private key");
    sub->add_option("--ssl-ca-certs", args->server.http.tls.ca_certs,
                    "HTTPS: PEM CA certificates that client certificates are checked against");
    sub->add_option("--ssl-cert-reqs", args->server.http.tls.cert_reqs,
                    "HTTPS client certificates, as Python's ssl.VerifyMode: 0 not asked, 1 checked when sent, 2 "
                    "required (1 and 2 need --ssl-ca-certs)")
        ->capture_default_str();
    sub->add_option("--hf-token", args->hf_token, "Hugging Face token for hub downloads (default: $HF_TOKEN)");
    sub->add_option_function<std::string>(
        "-O", [](const std::string&) { log_warn("-O (vLLM's compilation level) is accepted and has no effect here"); },
        "vLLM's torch.compile level: no effect here");
    for (const UnsupportedFlag& flag : kUnsupportedFlags) {
        const std::string message = fmt::format("{}: {}", flag.name, flag.why);
        if (flag.has_value)
            sub->add_option_function<std::string>(
                flag.name, [message](const std::string&) { fail(message); }, "not supported: an error");
        else
            sub->add_flag_callback(
                flag.name, [message] { fail(message); }, "not supported: an error");
    }
    add_engine_flags(sub, args->engine);
    sub->add_option_function<std::string>(
        "--distributed-executor-backend",
        [args](const std::string& value) {
            args->distributed_executor_backend = value;
            log_warn(
                "--distributed-executor-backend is accepted for vLLM compatibility; no effect here: it picks how "
                "vLLM launches its Python workers, and the engine here is one process");
        },
        "vLLM's worker launcher (mp, ray, uni, external_launcher): no effect here, the engine is one process");
    for (const NoOpFlag& flag : kNoOpFlags) {
        const std::string warning =
            fmt::format("{} is accepted for vLLM compatibility; no effect here: {}", flag.name, flag.why);
        const std::string help = fmt::format("no effect here: {}", flag.why);
        if (flag.has_value)
            sub->add_option_function<std::string>(
                flag.name, [warning](const std::string&) { log_warn("{}", warning); }, help);
        else
            sub->add_flag_callback(
                flag.name, [warning] { log_warn("{}", warning); }, help);
    }
    sub->callback([args] { run_serve(*args); });
});

}  // namespace
}  // namespace taco::cli
