#include "model/kv_cache_tensors.h"

#include "core/check.h"

namespace taco {

namespace {

// Each tensor starts 256-byte aligned, as its own allocation did (vector loads, TMA and cuDNN need 16 at least).
constexpr int64_t kTensorAlignBytes = 256;

}  // namespace

KvCacheTensors KvCacheTensors::allocate(const ModelConfig& config, int64_t num_blocks, int64_t block_size, DType dtype,
                                        MemoryKind memory) {
    KvCacheTensors kv;
    kv.num_blocks = num_blocks;
    kv.block_size = block_size;
    kv.dtype = dtype;
    kv.block_elements_ = block_size * config.num_key_value_heads * config.head_dim;
    const int64_t align = kTensorAlignBytes / int64_t(dtype_size_bytes(dtype));
    const int64_t pitch = (num_blocks * kv.block_elements_ + align - 1) / align * align;
    const int64_t num_tensors = 2 * config.num_hidden_layers;
    const int64_t dims[2] = {num_tensors, pitch};
    kv.storage = Tensor::empty(dims, dtype, memory);
    const TensorView& all = kv.storage.view();
    const int64_t layer_dims[4] = {num_blocks, block_size, config.num_key_value_heads, config.head_dim};
    for (int64_t t = 0; t < num_tensors; ++t) {
        char* data = static_cast<char*>(all.data) + size_t(t) * kv.row_pitch_bytes();
        (t % 2 == 0 ? kv.k : kv.v).push_back(TensorView(data, dtype, layer_dims, all.device));
    }
    return kv;
}

size_t KvCacheTensors::row_pitch_bytes() const { return size_t(storage.view().strides[0]) * dtype_size_bytes(dtype); }

TensorView KvCacheTensors::blocks(int64_t begin, int64_t end) const {
    TACO_CHECK_MSG(0 <= begin && begin <= end && end <= num_blocks, "KV blocks [{}, {}) of {}", begin, end, num_blocks);
    return storage.view().slice(1, begin * block_elements_, end * block_elements_);
}

}  // namespace taco
