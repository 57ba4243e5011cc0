// The engine's command-line flags, with vLLM's names, defaults and help in one place; `generate`, `serve` and
// `bench` add them to their subcommand. Flags whose default depends on the device stay unset when not given
// (EngineConfig's optionals), so the engine can tell "not given" from "given the default".
#pragma once

#include <optional>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/limits.h"
#include "engine/engine_config.h"
#include "tools/cli/model_load_flags.h"

namespace taco::cli {

namespace detail {

// --swap-space and --host-cache-gb are one setting (the host tier, GiB): the second given must agree with the first.
inline void set_host_cache_gb(EngineConfig& config, const char* flag, double gb) {
    if (config.host_cache_gb && *config.host_cache_gb != gb)
        throw CLI::ValidationError(fmt::format(
            "{} {} disagrees with {}: --swap-space and --host-cache-gb are the same setting (the host-memory tier of "
            "the KV cache, GiB); give one",
            flag, gb, *config.host_cache_gb));
    config.host_cache_gb = gb;
}

// vLLM's --kv-cache-dtype: "auto" (nullopt), or a dtype the engine checks against its KV cache's; fp8 caches are
// not implemented.
inline std::optional<DType> parse_kv_cache_dtype(const std::string& value) {
    if (value == "auto") return std::nullopt;
    if (value == "bfloat16") return DType::kBF16;
    if (value == "float16") return DType::kF16;
    if (value == "float32") return DType::kF32;
    if (value.rfind("fp8", 0) == 0)
        throw CLI::ValidationError(fmt::format(
            "--kv-cache-dtype {}: fp8 KV caches are not supported; the KV cache is kept in the activation dtype "
            "(--kv-cache-dtype auto)",
            value));
    throw CLI::ValidationError(
        fmt::format("--kv-cache-dtype {}: expected auto, bfloat16, float16 or float32 (the activation dtype)", value));
}

}  // namespace detail

inline void add_engine_flags(CLI::App* app, EngineConfig& config) {
    add_model_load_flags(app, config.device, config.dtype, config.load_format);
    app->add_option("--max-model-len", config.max_model_len, "Context length limit (default: from the model config)");
    app->add_option("--max-num-batched-tokens", config.max_num_batched_tokens, "Tokens computed per engine step")
        ->capture_default_str();
    app->add_option("--max-num-seqs", config.max_num_seqs, "Requests running at once")->capture_default_str();
    app->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", config.enable_prefix_caching,
                  "Reuse the KV cache of shared prompt prefixes")
        ->capture_default_str();
    app->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", config.enable_chunked_prefill,
                  "Split long prompts across steps")
        ->capture_default_str();
    app->add_option("--long-prefill-token-threshold", config.long_prefill_token_threshold,
                    "Tokens one request computes per step at most (a long prompt in chunks of that size, the rest of "
                    "the step's budget to others), and a longer prompt is long for --max-long-partial-prefills; 0: no "
                    "cap (with --max-num-partial-prefills > 1 or --max-long-partial-prefills: 4% of --max-model-len)")
        ->capture_default_str();
    app->add_option_function<int64_t>(
           "--max-num-partial-prefills", [&config](int64_t value) { config.max_num_partial_prefills = value; },
           "Requests partially prefilled (prefill started, not finished) at once, at least 1; a prompt a step would "
           "leave unfinished waits while that many are (default: no bound but --max-num-batched-tokens, which "
           "without --long-prefill-token-threshold leaves at most one)")
        ->default_str("no bound");
    app->add_option_function<int64_t>(
           "--max-long-partial-prefills", [&config](int64_t value) { config.max_long_partial_prefills = value; },
           "Of those, how many may be prompts longer than --long-prefill-token-threshold, at least 1 and at most "
           "--max-num-partial-prefills; a long prompt over it waits and shorter ones pass it (default: 1 with "
           "--max-num-partial-prefills, else no bound)")
        ->default_str("1 or no bound");
    app->add_option("--block-size", config.block_size, "KV cache block size in tokens (a power of two)")
        ->check(CLI::IsMember({1, 2, 4, 8, 16, 32, 64, 128}))
        ->capture_default_str();
    app->add_option_function<double>(
           "--gpu-memory-utilization", [&config](double value) { config.gpu_memory_utilization = value; },
           "Fraction of the GPU's memory this process may use, in (0, 1]; the KV cache gets what the weights and "
           "activations leave of it (CUDA only: an error with --device cpu)")
        ->default_str("0.9");
    app->add_option("--kv-cache-gb", config.kv_cache_gb,
                    "KV cache memory in GiB, instead of --gpu-memory-utilization's share (default on the CPU: 4)");
    app->add_option_function<int64_t>(
        "--num-gpu-blocks-override",
        [&config](int64_t value) {
            if (value < 1)
                throw CLI::ValidationError(fmt::format("--num-gpu-blocks-override must be positive, got {}", value));
            config.num_device_blocks = value;
        },
        "KV cache blocks, instead of any memory budget");
    app->add_option_function<double>(
        "--swap-space", [&config](double gb) { detail::set_host_cache_gb(config, "--swap-space", gb); },
        "Host-memory tier of the KV cache (the prefix cache's second tier) in GiB (default: 4 on CUDA, 0 on the CPU, "
        "whose KV is already in host memory)");
    app->add_option_function<double>(
        "--host-cache-gb", [&config](double gb) { detail::set_host_cache_gb(config, "--host-cache-gb", gb); },
        "Same as --swap-space");
    app->add_flag("--enforce-eager", config.enforce_eager,
                  "Launch every CUDA step op by op instead of replaying CUDA graphs of decode steps");
    app->add_flag_function(
           "--async-scheduling,!--no-async-scheduling",
           [&config](int64_t count) { config.async_scheduling = count > 0; },
           "Detokenize and stream a step's outputs while the device computes the next step (a stop string is then "
           "seen one step late: that step's row is computed and dropped; the outputs are the same) (default: on "
           "with CUDA, off on the CPU; TACO_ASYNC_SCHEDULING=0/1 changes the default)")
        ->default_str("on with CUDA");
    app->add_option("--cuda-graph-sizes", config.cuda_graph_sizes,
                    "Decode batch sizes captured as CUDA graphs at start (default: 1 2 4 8 16 ... up to "
                    "--max-num-seqs); larger decode steps and all prefill steps run eagerly")
        ->expected(1, int(limits::kMaxNumSeqs));
    app->add_option_function<std::string>(
           "--scheduling-policy",
           [&config](const std::string& value) {
               if (value == "fcfs")
                   config.scheduling_policy = SchedulingPolicy::kFcfs;
               else if (value == "priority")
                   config.scheduling_policy = SchedulingPolicy::kPriority;
               else
                   throw CLI::ValidationError(fmt::format("--scheduling-policy {}: expected fcfs or priority", value));
           },
           "fcfs (first come, first served) or priority (a request's 'priority', lower first, then arrival; the "
           "least urgent running request is preempted first)")
        ->default_str("fcfs");
    app->add_option_function<std::string>(
           "--kv-cache-dtype",
           [&config](const std::string& value) { config.kv_cache_dtype = detail::parse_kv_cache_dtype(value); },
           "KV cache dtype: auto (the activation dtype, the only layout here); a dtype named must be that one (fp8: "
           "an error)")
        ->default_str("auto");
    app->add_option("--max-logprobs", config.max_logprobs,
                    "The most logprobs / top_logprobs / prompt_logprobs a request may ask for (more: a 400 naming the "
                    "field), at most 20")
        ->capture_default_str();
    app->add_option("--seed", config.seed, "Seed for requests that carry no seed of their own")->capture_default_str();
}

}  // namespace taco::cli
