#include "engine/engine_config.h"

namespace taco {

Status EngineConfig::validate() const {
    if (model_dir.empty()) return error("no model folder given");
    if (max_model_len < 0) return error("--max-model-len must be positive, got {}", max_model_len);
    if (max_num_batched_tokens < 1)
        return error("--max-num-batched-tokens must be positive, got {}", max_num_batched_tokens);
    if (max_num_seqs < 1) return error("--max-num-seqs must be positive, got {}", max_num_seqs);
    if (block_size < 1 || (block_size & (block_size - 1)) != 0)
        return error("--block-size must be a power of two, got {}", block_size);
    if (kv_cache_gb < 0) return error("--kv-cache-gb must not be negative, got {}", kv_cache_gb);
    if (host_cache_gb < 0) return error("--host-cache-gb must not be negative, got {}", host_cache_gb);
    return Status::ok();
}

}  // namespace taco
