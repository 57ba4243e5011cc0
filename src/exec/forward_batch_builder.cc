#include "exec/forward_batch_builder.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace taco {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The block table's area at the buffer's start: [max_num_sequences, max_blocks] i32, whatever the step's shape.
size_t table_area_bytes(const BatchLimits& limits) {
    return aligned(size_t(limits.max_num_sequences * limits.max_blocks_per_seq) * 4);
}

// The arrays after it, in order: token_ids, positions, rotary_offsets [T] i32; slot_mapping [T] i64; query_start
// [S + 1], seq_lens [S] i32; logits_indices [L] i32.
size_t arrays_bytes(int64_t t, int64_t s, int64_t l) {
    return 3 * aligned(size_t(t) * 4) + aligned(size_t(t) * 8) + aligned(size_t(s + 1) * 4) + aligned(size_t(s) * 4) +
           aligned(size_t(l) * 4);
}

}  // namespace

ForwardBatchBuilder::ForwardBatchBuilder(const BatchLimits& limits, int64_t block_size, RotaryLayout rotary,
                                         MemoryKind memory)
    : limits_(limits), block_size_(block_size), rotary_(rotary) {
    TACO_CHECK(limits.max_num_tokens > 0 && limits.max_num_sequences > 0 && limits.max_num_logits >= 0 &&
               limits.max_blocks_per_seq > 0 && block_size > 0);
    const int64_t dims[1] = {
        int64_t(table_area_bytes(limits) +
                arrays_bytes(limits.max_num_tokens, limits.max_num_sequences, limits.max_num_logits))};
    buffer_ = Tensor::empty(std::span<const int64_t>(dims, 1), DType::kU8, memory);
    std::memset(buffer_.view().data, 0, buffer_.view().nbytes());
    written_.arrays_offset = table_area_bytes(limits);
}

ForwardBatch ForwardBatchBuilder::layout(void* base, Device device, int64_t t, int64_t s, int64_t l) const {
    auto* p = static_cast<uint8_t*>(base);
    ForwardBatch b;
    b.num_tokens = t;
    b.num_sequences = s;
    b.attention.block_tables = TensorView(p, DType::kI32, {s, limits_.max_blocks_per_seq}, device);
    p += table_area_bytes(limits_);
    auto take = [&](size_t bytes) {
        uint8_t* at = p;
        p += aligned(bytes);
        return at;
    };
    b.token_ids = TensorView(take(size_t(t) * 4), DType::kI32, {t}, device);
    b.attention.positions = TensorView(take(size_t(t) * 4), DType::kI32, {t}, device);
    b.rotary_offsets = TensorView(take(size_t(t) * 4), DType::kI32, {t}, device);
    b.slot_mapping = TensorView(take(size_t(t) * 8), DType::kI64, {t}, device);
    b.attention.query_start = TensorView(take(size_t(s + 1) * 4), DType::kI32, {s + 1}, device);
    b.attention.seq_lens = TensorView(take(size_t(s) * 4), DType::kI32, {s}, device);
    b.logits_indices = TensorView(take(size_t(l) * 4), DType::kI32, {l}, device);
    return b;
}

// Zeroes what the last build wrote (its arrays and its block-table rectangle), so that the whole buffer is zero
// again but for what the next build writes; clearing the whole table instead took a memset of max_num_sequences x
// max_blocks entries per step (8 MB for 256 sequences of a 128k-token model).
void ForwardBatchBuilder::clear_last_build() {
    auto* base = static_cast<uint8_t*>(buffer_.view().data);
    std::memset(base + table_area_bytes(limits_), 0, written_.arrays_bytes);
    auto* table = reinterpret_cast<int32_t*>(base);
    for (int64_t r = 0; r < written_.table_rows; ++r)
        std::fill_n(table + r * limits_.max_blocks_per_seq, written_.table_cols, 0);
    written_ = Written{table_area_bytes(limits_), 0, 0, 0};
}

const ForwardBatch& ForwardBatchBuilder::build(std::span<const RunnerSequence> sequences, int64_t pad_tokens_to) {
    int64_t t = 0, l = 0;
    for (const RunnerSequence& seq : sequences) {
        t += seq.num_new_tokens;
        l += seq.num_logits();
    }
    const int64_t s = int64_t(sequences.size());
    return pack(sequences, std::max(t, pad_tokens_to), s, l);
}

const ForwardBatch& ForwardBatchBuilder::build_decode_bucket(std::span<const RunnerSequence> sequences,
                                                             int64_t bucket) {
    const int64_t s = int64_t(sequences.size());
    TACO_CHECK_MSG(s <= bucket, "decode bucket of {} rows for {} sequences", bucket, s);
    for (const RunnerSequence& seq : sequences)
        TACO_CHECK_MSG(seq.num_new_tokens == 1 && seq.num_prompt_logits == 0 && seq.wants_logits,
                       "a decode bucket takes one new token with its logits per sequence ({} new, {} prompt logits)",
                       seq.num_new_tokens, seq.num_prompt_logits);
    pack(sequences, bucket, bucket, bucket);
    // The padding sequences: no tokens (they start where the real tokens end), length 0, an all-zero block table;
    // their logits rows are padding rows, computed and never read.
    int32_t* query_start = batch_.attention.query_start.as<int32_t>();
    int32_t* logits = batch_.logits_indices.as<int32_t>();
    for (int64_t i = s; i < bucket; ++i) {
        query_start[i + 1] = int32_t(s);
        logits[i] = int32_t(i);
    }
    // The launch shapes may depend on these two only through the bucket: the longest sequence the cache allows.
    batch_.attention.max_query_len = 1;
    batch_.attention.max_seq_len = int32_t(limits_.max_blocks_per_seq * block_size_);
    return batch_;
}

const ForwardBatch& ForwardBatchBuilder::pack(std::span<const RunnerSequence> sequences, int64_t rows, int64_t s,
                                              int64_t l) {
    TACO_CHECK_MSG(rows <= limits_.max_num_tokens && s <= limits_.max_num_sequences && l <= limits_.max_num_logits,
                   "step of {} tokens, {} sequences, {} logits past the limits {} / {} / {}", rows, s, l,
                   limits_.max_num_tokens, limits_.max_num_sequences, limits_.max_num_logits);
    clear_last_build();
    batch_ = layout(buffer_.view().data, Device::kCpu, rows, s, l);
    written_.arrays_bytes = arrays_bytes(rows, s, l);
    batch_.attention.max_query_len = 0;
    batch_.attention.max_seq_len = 0;

    int32_t* ids = batch_.token_ids.as<int32_t>();
    int32_t* positions = batch_.attention.positions.as<int32_t>();
    int32_t* offsets = batch_.rotary_offsets.as<int32_t>();
    int64_t* slots = batch_.slot_mapping.as<int64_t>();
    int32_t* query_start = batch_.attention.query_start.as<int32_t>();
    int32_t* seq_lens = batch_.attention.seq_lens.as<int32_t>();
    int32_t* logits = batch_.logits_indices.as<int32_t>();
    int32_t* tables = batch_.attention.block_tables.as<int32_t>();
    const int64_t width = limits_.max_blocks_per_seq;
    int64_t row = 0, logit = 0;
    const int64_t real = int64_t(sequences.size());  // s may add padding sequences (build_decode_bucket)
    for (int64_t i = 0; i < real; ++i) {
        const RunnerSequence& seq = sequences[size_t(i)];
        TACO_CHECK_GT(seq.num_new_tokens, 0);
        const int64_t end = seq.num_computed_tokens + seq.num_new_tokens;
        TACO_CHECK_LE(end, int64_t(seq.token_ids.size()));
        const int64_t blocks_needed = (end + block_size_ - 1) / block_size_;
        TACO_CHECK_MSG(blocks_needed <= int64_t(seq.block_table.size()) && blocks_needed <= width,
                       "sequence of {} tokens needs {} blocks: its table has {}, the batch width is {}", end,
                       blocks_needed, seq.block_table.size(), width);
        TACO_CHECK(seq.num_prompt_logits >= 0 && seq.num_logits() <= seq.num_new_tokens);
        query_start[i] = int32_t(row);
        seq_lens[i] = int32_t(end);
        const int64_t copied = std::min<int64_t>(int64_t(seq.block_table.size()), width);
        std::copy_n(seq.block_table.data(), copied, tables + i * width);
        written_.table_cols = std::max(written_.table_cols, copied);
        const int64_t length = std::max(seq.max_length, end);
        const int32_t offset =
            rotary_.long_rope_threshold > 0 && length > rotary_.long_rope_threshold ? rotary_.long_table_offset : 0;
        for (int64_t j = 0; j < seq.num_prompt_logits; ++j) logits[logit++] = int32_t(row + j);
        for (int64_t p = seq.num_computed_tokens; p < end; ++p, ++row) {
            ids[row] = seq.token_ids[size_t(p)];
            positions[row] = int32_t(p);
            offsets[row] = offset;
            slots[row] = int64_t(seq.block_table[size_t(p / block_size_)]) * block_size_ + p % block_size_;
        }
        if (seq.wants_logits) logits[logit++] = int32_t(row - 1);
        batch_.attention.max_query_len = std::max(batch_.attention.max_query_len, int32_t(seq.num_new_tokens));
        batch_.attention.max_seq_len = std::max(batch_.attention.max_seq_len, int32_t(end));
    }
    query_start[real] = int32_t(row);
    written_.table_rows = real;                 // the padding sequences' rows stay zero
    for (; row < rows; ++row) slots[row] = -1;  // padding: ids and positions stay 0
    return batch_;
}

const ForwardBatch& ForwardBatchBuilder::build_shape(int64_t num_tokens, int64_t num_sequences, int64_t num_logits) {
    TACO_CHECK(num_tokens <= limits_.max_num_tokens && num_sequences <= limits_.max_num_sequences &&
               num_logits <= limits_.max_num_logits);
    clear_last_build();
    batch_ = layout(buffer_.view().data, Device::kCpu, num_tokens, num_sequences, num_logits);
    written_.arrays_bytes = arrays_bytes(num_tokens, num_sequences, num_logits);
    batch_.attention.max_query_len = int32_t(num_tokens);
    batch_.attention.max_seq_len = int32_t(limits_.max_blocks_per_seq * block_size_);
    return batch_;
}

ForwardBatch ForwardBatchBuilder::rebased(void* base, Device device) const {
    ForwardBatch b = layout(base, device, batch_.num_tokens, batch_.num_sequences, batch_.num_logits());
    b.attention.max_query_len = batch_.attention.max_query_len;
    b.attention.max_seq_len = batch_.attention.max_seq_len;
    return b;
}

}  // namespace taco
