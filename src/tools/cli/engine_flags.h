// The engine's command-line flags, with vLLM's names, defaults and help in one place; `generate` (and `serve`)
// add them to their subcommand.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_config.h"

namespace taco::cli {

inline void add_engine_flags(CLI::App* app, EngineConfig& config) {
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
    app->add_option("--block-size", config.block_size, "KV cache block size in tokens (a power of two)")
        ->check(CLI::IsMember({1, 2, 4, 8, 16, 32, 64, 128}))
        ->capture_default_str();
    app->add_option("--kv-cache-gb", config.kv_cache_gb, "KV cache memory in GiB (default: 4 on the CPU backend)");
    app->add_option("--host-cache-gb", config.host_cache_gb,
                    "Host-memory tier of the prefix cache in GiB (default 0 on the CPU backend, whose KV is already in "
                    "host memory)");
    app->add_option("--seed", config.seed, "Seed for requests that carry no seed of their own")->capture_default_str();
}

}  // namespace taco::cli
