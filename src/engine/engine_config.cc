#include "engine/engine_config.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/limits.h"
#include "core/log.h"
#include "exec/sampling_params.h"

namespace taco {

Status EngineConfig::validate() const {
    if (model_dir.empty()) return error("no model folder given");
    if (max_model_len < 0) return error("--max-model-len must be positive, got {}", max_model_len);
    if (max_model_len > limits::kMaxModelPositions)
        return error("--max-model-len must be at most {} (limits::kMaxModelPositions), got {}",
                     limits::kMaxModelPositions, max_model_len);
    if (max_num_batched_tokens < 1 || max_num_batched_tokens > limits::kMaxBatchedTokens)
        return error("--max-num-batched-tokens must be in [1, {}] (limits::kMaxBatchedTokens), got {}",
                     limits::kMaxBatchedTokens, max_num_batched_tokens);
    if (max_num_seqs < 1 || max_num_seqs > limits::kMaxNumSeqs)
        return error("--max-num-seqs must be in [1, {}] (limits::kMaxNumSeqs), got {}", limits::kMaxNumSeqs,
                     max_num_seqs);
    if (block_size < 1 || (block_size & (block_size - 1)) != 0)
        return error("--block-size must be a power of two, got {}", block_size);
    if (!std::isfinite(kv_cache_gb) || kv_cache_gb < 0)
        return error("--kv-cache-gb must be a non-negative number, got {}", kv_cache_gb);
    if (gpu_memory_utilization && !(*gpu_memory_utilization > 0 && *gpu_memory_utilization <= 1))
        return error("--gpu-memory-utilization must be in (0, 1], got {}", *gpu_memory_utilization);
    if (host_cache_gb && (!std::isfinite(*host_cache_gb) || *host_cache_gb < 0))
        return error("--swap-space (--host-cache-gb) must be a non-negative number of GiB, got {}", *host_cache_gb);
    if (num_device_blocks < 0) return error("--num-gpu-blocks-override must be positive, got {}", num_device_blocks);
    for (int64_t size : cuda_graph_sizes)
        if (size < 1 || size > limits::kMaxNumSeqs)
            return error("--cuda-graph-sizes: {} is not a batch size in [1, {}]", size, limits::kMaxNumSeqs);
    if (max_logprobs < 0 || max_logprobs > SamplingParams::kMaxLogprobs)
        return error("--max-logprobs must be in [0, {}] (the samplers return at most {} log probabilities), got {}",
                     SamplingParams::kMaxLogprobs, SamplingParams::kMaxLogprobs, max_logprobs);
    if (max_num_partial_prefills && *max_num_partial_prefills < 1)
        return error("--max-num-partial-prefills must be at least 1, got {}", *max_num_partial_prefills);
    if (max_long_partial_prefills && *max_long_partial_prefills < 1)
        return error("--max-long-partial-prefills must be at least 1, got {}", *max_long_partial_prefills);
    if (max_num_partial_prefills && max_long_partial_prefills && *max_long_partial_prefills > *max_num_partial_prefills)
        return error("--max-long-partial-prefills ({}) must be at most --max-num-partial-prefills ({})",
                     *max_long_partial_prefills, *max_num_partial_prefills);
    if (max_num_partial_prefills && *max_num_partial_prefills > 1 && !enable_chunked_prefill)
        return error("--max-num-partial-prefills {} prefills prompts in chunks side by side: it needs chunked prefill",
                     *max_num_partial_prefills);
    if (enforce_eager && !cuda_graph_sizes.empty())
        return error("--cuda-graph-sizes with --enforce-eager: eager steps capture no graphs; give one of them");
    return Status::ok();
}

Status EngineConfig::validate_for(Device device) const {
    if (device == Device::kCuda || !gpu_memory_utilization) return Status::ok();
    // The flag sizes GPU memory. Asked for the CPU outright, it contradicts the command line; reached by --device
    // auto on a machine without a usable GPU, the same command line also serves GPU machines, so it only warns.
    if (this->device == DeviceChoice::kCpu)
        return error(
            "--gpu-memory-utilization sizes the KV cache in GPU memory and --device cpu runs on the CPU: size the "
            "CPU's "
            "KV cache with --kv-cache-gb (default 4 GiB) instead");
    log_warn(
        "--gpu-memory-utilization {} has no effect on the CPU (no usable GPU); the KV cache gets --kv-cache-gb "
        "(default 4 GiB)",
        *gpu_memory_utilization);
    return Status::ok();
}

Result<bool> EngineConfig::async_scheduling_for(Device device) const {
    if (async_scheduling) return *async_scheduling;
    if (const char* env = std::getenv("TACO_ASYNC_SCHEDULING")) {
        const std::string value = env;
        if (value == "1") return true;
        if (value == "0") return false;
        return error("TACO_ASYNC_SCHEDULING={}: expected 0 or 1", value.substr(0, 40));
    }
    return device == Device::kCuda;
}

}  // namespace taco
