#include "exec/model_runner.h"

#include <cstring>

#include "core/check.h"
#include "exec/kv_sizing.h"

namespace taco {

ModelRunner::ModelRunner(std::unique_ptr<Decoder> decoder, const RunnerOptions& options)
    : decoder_(std::move(decoder)),
      device_kv_(KvCacheTensors::allocate(decoder_->config(), options.num_device_blocks, options.block_size)),
      host_kv_(KvCacheTensors::allocate(decoder_->config(), options.num_host_blocks, options.block_size)) {
    ExecutorOptions e;
    e.max_num_tokens = options.max_num_batched_tokens;
    e.max_num_sequences = options.max_num_seqs;
    e.max_model_len = options.max_model_len;
    e.block_size = options.block_size;
    executor_ = std::make_unique<ForwardExecutor>(*decoder_, e);
    executor_->size_workspace(device_kv_);
}

void ModelRunner::copy_blocks(std::span<const KvCopy> copies) {
    for (const KvCopy& c : copies) {
        KvCacheTensors& src = c.src_host ? host_kv_ : device_kv_;
        KvCacheTensors& dst = c.dst_host ? host_kv_ : device_kv_;
        TACO_CHECK(c.src_block >= 0 && c.src_block < src.num_blocks);
        TACO_CHECK(c.dst_block >= 0 && c.dst_block < dst.num_blocks);
        for (size_t layer = 0; layer < src.k.size(); ++layer) {
            for (auto member : {&KvCacheTensors::k, &KvCacheTensors::v}) {
                const Tensor& s = (src.*member)[layer];
                const Tensor& d = (dst.*member)[layer];
                const size_t block_bytes = s.view().nbytes() / size_t(src.num_blocks);
                std::memcpy(static_cast<uint8_t*>(d.view().data) + size_t(c.dst_block) * block_bytes,
                            static_cast<const uint8_t*>(s.view().data) + size_t(c.src_block) * block_bytes,
                            block_bytes);
            }
        }
    }
}

TensorView ModelRunner::execute(std::span<const RunnerSequence> sequences) {
    return executor_->execute(sequences, device_kv_);
}

}  // namespace taco
