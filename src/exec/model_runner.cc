#include "exec/model_runner.h"

#include <cstring>

#include "core/check.h"
#include "exec/kv_sizing.h"

namespace taco {

ModelRunner::ModelRunner(std::unique_ptr<Decoder> decoder, int64_t num_device_blocks, int64_t num_host_blocks,
                         int64_t block_size)
    : decoder_(std::move(decoder)),
      device_kv_(KvCacheTensors::allocate(decoder_->config(), num_device_blocks, block_size)),
      host_kv_(KvCacheTensors::allocate(decoder_->config(), num_host_blocks, block_size)) {}

int64_t ModelRunner::kv_bytes_per_block(const ModelConfig& config, int64_t block_size) {
    return taco::kv_bytes_per_block(config, block_size, DType::kF32);
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

Tensor ModelRunner::execute(std::span<const RunnerSequence> sequences) {
    const int64_t block_size = device_kv_.block_size;
    ForwardBatch batch;
    batch.attention.query_start.push_back(0);
    for (const RunnerSequence& s : sequences) {
        TACO_CHECK_GT(s.num_new_tokens, 0);
        const int64_t end = s.num_computed_tokens + s.num_new_tokens;
        TACO_CHECK_LE(end, int64_t(s.token_ids.size()));
        TACO_CHECK_LE((end + block_size - 1) / block_size, int64_t(s.block_table.size()));
        TACO_CHECK(s.num_prompt_logits >= 0 && s.num_logits() <= s.num_new_tokens);
        const int32_t first_row = int32_t(batch.token_ids.size());
        for (int64_t i = 0; i < s.num_prompt_logits; ++i) batch.logits_indices.push_back(first_row + int32_t(i));
        for (int64_t p = s.num_computed_tokens; p < end; ++p) {
            batch.token_ids.push_back(s.token_ids[size_t(p)]);
            batch.attention.positions.push_back(int32_t(p));
            batch.slot_mapping.push_back(int64_t(s.block_table[size_t(p / block_size)]) * block_size + p % block_size);
        }
        if (s.wants_logits) batch.logits_indices.push_back(int32_t(batch.token_ids.size() - 1));
        batch.attention.block_tables.emplace_back(s.block_table.begin(), s.block_table.end());
        batch.max_lengths.push_back(std::max(s.max_length, end));
        batch.attention.query_start.push_back(int32_t(batch.token_ids.size()));
    }
    return decoder_->forward(batch, device_kv_);
}

}  // namespace taco
