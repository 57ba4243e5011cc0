#include "exec/kv_sizing.h"

#include <algorithm>
#include <cmath>

namespace taco {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Block counts past this are no budget a machine has (and would overflow int64 bytes): an error, not a cast.
constexpr double kMaxBlocks = 1e15;
constexpr const char* kHostFlags = "--swap-space (--host-cache-gb)";

double gib(double bytes) { return bytes / kGiB; }

Status check_budget(const char* flag, double gb) {
    if (!std::isfinite(gb) || gb < 0) return error("{} must be a non-negative number, got {}", flag, gb);
    return Status::ok();
}

// Whole blocks of `bytes_per_block` in `gb` GiB.
Result<int64_t> blocks_in(const char* flag, double gb, int64_t bytes_per_block) {
    const double blocks = std::floor(gb * kGiB / double(bytes_per_block));
    if (blocks > kMaxBlocks) return error("{} {} is more memory than any machine has", flag, gb);
    return int64_t(blocks);
}

Status validate_gpu(const GpuMemoryBudget& gpu) {
    if (!(gpu.utilization > 0 && gpu.utilization <= 1))
        return error("--gpu-memory-utilization must be in (0, 1], got {}", gpu.utilization);
    if (gpu.total_bytes < 1)
        return error("KV sizing: the GPU's total memory must be positive, got {}", gpu.total_bytes);
    if (gpu.free_bytes_at_start < 0 || gpu.free_bytes_at_start > gpu.total_bytes || gpu.used_bytes < 0)
        return error("KV sizing: inconsistent GPU memory figures (total {}, free at start {}, used {})",
                     gpu.total_bytes, gpu.free_bytes_at_start, gpu.used_bytes);
    return Status::ok();
}

// The GPU rule (kv_sizing.h, GpuMemoryBudget).
Result<int64_t> gpu_rule_blocks(const KvSizingConfig& config, const GpuMemoryBudget& gpu, const KvSizing& sizing) {
    const double requested = gpu.utilization * double(gpu.total_bytes);
    if (double(gpu.free_bytes_at_start) < requested)
        return error(
            "only {:.2f} GiB of the GPU's {:.2f} GiB were free when this process started, less than "
            "--gpu-memory-utilization {} asks for ({:.2f} GiB): lower --gpu-memory-utilization or free the GPU "
            "memory other processes hold",
            gib(double(gpu.free_bytes_at_start)), gib(double(gpu.total_bytes)), gpu.utilization, gib(requested));
    const double kv_bytes = std::max(0.0, requested - double(gpu.used_bytes));
    const double blocks = std::floor(kv_bytes / double(sizing.bytes_per_block));
    if (blocks > kMaxBlocks) return error("KV sizing: {} GiB is more memory than any GPU has", gib(kv_bytes));
    if (int64_t(blocks) < sizing.blocks_per_seq)
        return error(
            "--gpu-memory-utilization {} lets this process use {:.2f} GiB of the GPU's {:.2f} GiB; the weights, "
            "activations and CUDA libraries take {:.2f} GiB, leaving {:.2f} GiB for the KV cache: {} blocks of {} "
            "tokens, too few for one request of --max-model-len {} ({} blocks, {:.2f} GiB). Lower --max-model-len "
            "or raise --gpu-memory-utilization",
            gpu.utilization, gib(requested), gib(double(gpu.total_bytes)), gib(double(gpu.used_bytes)), gib(kv_bytes),
            int64_t(blocks), config.block_size, config.max_model_len, sizing.blocks_per_seq,
            gib(double(sizing.blocks_per_seq) * double(sizing.bytes_per_block)));
    return int64_t(blocks);
}

}  // namespace

KvSizingConfig KvSizingConfig::for_model(const ModelConfig& model, int64_t block_size, DType kv_dtype) {
    KvSizingConfig config;
    config.num_layers = model.num_hidden_layers;
    config.num_kv_heads = model.num_key_value_heads;
    config.head_dim = model.head_dim;
    config.block_size = block_size;
    config.kv_dtype = kv_dtype;
    return config;
}

Status KvSizingConfig::validate() const {
    if (num_layers < 1) return error("KV sizing: num_layers must be positive, got {}", num_layers);
    if (num_kv_heads < 1) return error("KV sizing: num_kv_heads must be positive, got {}", num_kv_heads);
    if (head_dim < 1) return error("KV sizing: head_dim must be positive, got {}", head_dim);
    if (block_size < 1) return error("--block-size must be positive, got {}", block_size);
    if (!dtype_is_float(kv_dtype))
        return error("the KV cache dtype must be a float type, got {}", dtype_name(kv_dtype));
    TACO_RETURN_IF_ERROR(check_budget("--kv-cache-gb", kv_cache_gb));
    TACO_RETURN_IF_ERROR(check_budget(kHostFlags, host_cache_gb));
    if (gpu) TACO_RETURN_IF_ERROR(validate_gpu(*gpu));
    if (max_model_len < 1) return error("--max-model-len must be positive, got {}", max_model_len);
    if (max_num_seqs < 1) return error("--max-num-seqs must be positive, got {}", max_num_seqs);
    return Status::ok();
}

int64_t kv_bytes_per_block(const KvSizingConfig& config) {
    return 2 * config.num_layers * config.block_size * config.num_kv_heads * config.head_dim *
           int64_t(dtype_size_bytes(config.kv_dtype));
}

int64_t kv_bytes_per_block(const ModelConfig& model, int64_t block_size, DType kv_dtype) {
    return kv_bytes_per_block(KvSizingConfig::for_model(model, block_size, kv_dtype));
}

Result<KvSizing> size_kv_cache(const KvSizingConfig& config) {
    TACO_RETURN_IF_ERROR(config.validate());
    KvSizing sizing;
    sizing.bytes_per_block = kv_bytes_per_block(config);
    sizing.blocks_per_seq = (config.max_model_len + config.block_size - 1) / config.block_size;
    sizing.num_device_blocks = config.num_device_blocks;
    if (sizing.num_device_blocks <= 0 && config.kv_cache_gb <= 0 && config.gpu) {
        TACO_ASSIGN_OR_RETURN(sizing.num_device_blocks, gpu_rule_blocks(config, *config.gpu, sizing));
    } else if (sizing.num_device_blocks <= 0) {
        const double gb = config.kv_cache_gb > 0 ? config.kv_cache_gb : kDefaultKvCacheGb;
        TACO_ASSIGN_OR_RETURN(const int64_t budget, blocks_in("--kv-cache-gb", gb, sizing.bytes_per_block));
        // No more than every running request at full length can use.
        sizing.num_device_blocks = std::min(budget, sizing.blocks_per_seq * config.max_num_seqs);
    }
    if (sizing.num_device_blocks < sizing.blocks_per_seq)
        return error(
            "the KV cache holds {} blocks of {} tokens, too few for one request of --max-model-len {} "
            "(raise --kv-cache-gb or lower --max-model-len)",
            sizing.num_device_blocks, config.block_size, config.max_model_len);
    if (config.num_host_blocks >= 0) {
        sizing.num_host_blocks = config.num_host_blocks;
    } else {
        TACO_ASSIGN_OR_RETURN(sizing.num_host_blocks,
                              blocks_in(kHostFlags, config.host_cache_gb, sizing.bytes_per_block));
    }
    return sizing;
}

}  // namespace taco
