#include "exec/kv_sizing.h"

#include <algorithm>
#include <cmath>

namespace taco {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Block counts past this are no budget a machine has (and would overflow int64 bytes): an error, not a cast.
constexpr double kMaxBlocks = 1e15;

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
    TACO_RETURN_IF_ERROR(check_budget("--host-cache-gb", host_cache_gb));
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
    if (sizing.num_device_blocks <= 0) {
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
                              blocks_in("--host-cache-gb", config.host_cache_gb, sizing.bytes_per_block));
    }
    return sizing;
}

}  // namespace taco
