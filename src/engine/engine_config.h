// EngineConfig: everything `taco_llm generate/serve` passes to the engine, with vLLM's defaults.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace taco {

struct EngineConfig {
    std::string model_dir;
    int64_t max_model_len = 0;  // 0: derived from the config as vLLM does
    int64_t max_num_batched_tokens = 8192;
    int64_t max_num_seqs = 256;
    bool enable_chunked_prefill = true;
    bool enable_prefix_caching = true;
    int64_t block_size = 16;
    double kv_cache_gb = 0;         // device-tier KV memory; 0: 4 GiB on the CPU backend
    double host_cache_gb = 0;       // host-tier KV memory (0 on the CPU backend: its device tier is host memory)
    int64_t num_device_blocks = 0;  // overrides kv_cache_gb when > 0 (tests)
    int64_t num_host_blocks = -1;   // overrides host_cache_gb when >= 0 (tests)
    uint64_t seed = 0;              // seeds requests that carry no seed

    Status validate() const;
};

}  // namespace taco
