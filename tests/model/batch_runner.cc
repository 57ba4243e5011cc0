#include "batch_runner.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace taco::testing_util {
namespace {

std::vector<float> row_of(const TensorView& logits, int64_t row) {
    const int64_t vocab = logits.shape[1];
    return std::vector<float>(logits.row<float>(row), logits.row<float>(row) + vocab);
}

}  // namespace

TensorView run_sequences(ForwardExecutor& executor, std::span<const RunnerSequence> sequences, KvCacheTensors& kv) {
    return executor.execute(sequences, kv);
}

std::vector<std::vector<std::vector<float>>> run_together(Decoder& decoder, const std::vector<SequenceSpec>& sequences,
                                                          int64_t block_size, uint32_t shuffle_seed) {
    int64_t total_blocks = 0, total_tokens = 0, longest = 1;
    for (const auto& s : sequences) {
        total_blocks += (int64_t(s.ids.size()) + block_size - 1) / block_size;
        total_tokens += int64_t(s.ids.size());
        longest = std::max<int64_t>(longest, int64_t(s.ids.size()));
    }
    std::vector<int32_t> free_blocks(static_cast<size_t>(total_blocks));
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(shuffle_seed));
    KvCacheTensors kv = KvCacheTensors::allocate(decoder.config(), total_blocks, block_size);

    std::vector<std::vector<int32_t>> tables;
    size_t next_block = 0;
    for (const auto& s : sequences) {
        std::vector<int32_t> table;
        for (int64_t b = 0; b < (int64_t(s.ids.size()) + block_size - 1) / block_size; ++b)
            table.push_back(free_blocks[next_block++]);
        tables.push_back(std::move(table));
    }
    std::vector<RunnerSequence> runner_sequences;
    for (size_t i = 0; i < sequences.size(); ++i) {
        RunnerSequence seq;
        seq.token_ids = sequences[i].ids;
        seq.num_new_tokens = int64_t(sequences[i].ids.size());
        seq.block_table = tables[i];
        seq.num_prompt_logits = seq.num_new_tokens;  // every row
        seq.max_length = seq.num_new_tokens;
        runner_sequences.push_back(seq);
    }
    ExecutorOptions options;
    options.max_num_tokens = total_tokens;
    options.max_num_sequences = int64_t(sequences.size());
    options.max_model_len = longest;
    options.block_size = block_size;
    ForwardExecutor executor(decoder, options);
    const TensorView logits = executor.execute(runner_sequences, kv);
    std::vector<std::vector<std::vector<float>>> out(sequences.size());
    int64_t row = 0;
    for (size_t s = 0; s < sequences.size(); ++s)
        for (size_t i = 0; i < sequences[s].ids.size(); ++i) out[s].push_back(row_of(logits, row++));
    return out;
}

std::vector<std::vector<float>> run_chunked(Decoder& decoder, const std::vector<int32_t>& ids, int64_t chunk,
                                            int64_t block_size) {
    const int64_t length = int64_t(ids.size());
    const int64_t num_blocks = (length + block_size - 1) / block_size;
    KvCacheTensors kv = KvCacheTensors::allocate(decoder.config(), num_blocks, block_size);
    std::vector<int32_t> table(static_cast<size_t>(num_blocks));
    std::iota(table.rbegin(), table.rend(), 0);  // reversed: logical order differs from physical
    ExecutorOptions options;
    options.max_num_tokens = std::min(chunk, length);
    options.max_num_sequences = 1;
    options.max_model_len = length;
    options.block_size = block_size;
    ForwardExecutor executor(decoder, options);
    std::vector<std::vector<float>> out;
    for (int64_t begin = 0; begin < length; begin += chunk) {
        const int64_t end = std::min<int64_t>(length, begin + chunk);
        RunnerSequence seq;
        seq.token_ids = ids;
        seq.num_computed_tokens = begin;
        seq.num_new_tokens = end - begin;
        seq.block_table = table;
        seq.num_prompt_logits = end - begin;
        seq.max_length = length;
        const TensorView logits = executor.execute({&seq, 1}, kv);
        for (int64_t r = 0; r < end - begin; ++r) out.push_back(row_of(logits, r));
    }
    return out;
}

}  // namespace taco::testing_util
