#include "batch_runner.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace taco::testing_util {
namespace {

std::vector<float> row_of(const Tensor& logits, int64_t row) {
    const int64_t vocab = logits.size(1);
    return std::vector<float>(logits.as<float>() + row * vocab, logits.as<float>() + (row + 1) * vocab);
}

}  // namespace

std::vector<std::vector<std::vector<float>>> run_together(Decoder& decoder, const std::vector<SequenceSpec>& sequences,
                                                          int64_t block_size, uint32_t shuffle_seed) {
    int64_t total_blocks = 0;
    for (const auto& s : sequences) total_blocks += (int64_t(s.ids.size()) + block_size - 1) / block_size;
    std::vector<int32_t> free_blocks(static_cast<size_t>(total_blocks));
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(shuffle_seed));
    KvCacheTensors kv = KvCacheTensors::allocate(decoder.config(), total_blocks, block_size);

    ForwardBatch batch;
    batch.attention.query_start.push_back(0);
    size_t next_block = 0;
    for (const auto& s : sequences) {
        std::vector<int32_t> table;
        for (int64_t b = 0; b < (int64_t(s.ids.size()) + block_size - 1) / block_size; ++b)
            table.push_back(free_blocks[next_block++]);
        for (size_t i = 0; i < s.ids.size(); ++i) {
            batch.logits_indices.push_back(int32_t(batch.token_ids.size()));
            batch.token_ids.push_back(s.ids[i]);
            batch.attention.positions.push_back(int32_t(i));
            batch.slot_mapping.push_back(int64_t(table[i / size_t(block_size)]) * block_size + int64_t(i) % block_size);
        }
        batch.attention.block_tables.push_back(table);
        batch.attention.query_start.push_back(int32_t(batch.token_ids.size()));
        batch.max_lengths.push_back(int64_t(s.ids.size()));
    }
    Tensor logits = decoder.forward(batch, kv);
    std::vector<std::vector<std::vector<float>>> out(sequences.size());
    int64_t row = 0;
    for (size_t s = 0; s < sequences.size(); ++s)
        for (size_t i = 0; i < sequences[s].ids.size(); ++i) out[s].push_back(row_of(logits, row++));
    return out;
}

std::vector<std::vector<float>> run_chunked(Decoder& decoder, const std::vector<int32_t>& ids, int64_t chunk,
                                            int64_t block_size) {
    const int64_t num_blocks = (int64_t(ids.size()) + block_size - 1) / block_size;
    KvCacheTensors kv = KvCacheTensors::allocate(decoder.config(), num_blocks, block_size);
    std::vector<int32_t> table(static_cast<size_t>(num_blocks));
    std::iota(table.rbegin(), table.rend(), 0);  // reversed: logical order differs from physical
    std::vector<std::vector<float>> out;
    for (int64_t begin = 0; begin < int64_t(ids.size()); begin += chunk) {
        const int64_t end = std::min<int64_t>(int64_t(ids.size()), begin + chunk);
        ForwardBatch batch;
        batch.attention.query_start = {0, int32_t(end - begin)};
        batch.attention.block_tables = {table};
        batch.max_lengths = {int64_t(ids.size())};
        for (int64_t p = begin; p < end; ++p) {
            batch.logits_indices.push_back(int32_t(p - begin));
            batch.token_ids.push_back(ids[size_t(p)]);
            batch.attention.positions.push_back(int32_t(p));
            batch.slot_mapping.push_back(int64_t(table[size_t(p / block_size)]) * block_size + p % block_size);
        }
        Tensor logits = decoder.forward(batch, kv);
        for (int64_t r = 0; r < end - begin; ++r) out.push_back(row_of(logits, r));
    }
    return out;
}

}  // namespace taco::testing_util
