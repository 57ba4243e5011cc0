// ForwardBatchBuilder: turns one step's sequences into a ForwardBatch in one persistent buffer (the only builder:
// the runner, perplexity and tests all use it). The buffer is sized once for the runner's limits. Block tables come
// first, [S, max_blocks] rows of an area of max_num_sequences rows with the runner's fixed max_blocks width (ceil
// (max_model_len / block_size): 8,192 entries a row for a 128k-token model), unused entries 0; the other arrays follow
// at offsets that depend only on the step's shape (T, S, L), so the same shape gets the same addresses. A build
// writes the arrays and a rectangle of the table (its sequences' rows, as many columns as the longest table), and
// clears what the build before wrote, so the rest of the buffer stays zero and no step touches the whole table
// (written() says what a device copy needs).
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "model/forward_batch.h"

namespace taco {

struct RunnerSequence {
    std::span<const int32_t> token_ids;    // the whole sequence known so far
    int64_t num_computed_tokens = 0;       // tokens whose KV is already in the cache
    int64_t num_new_tokens = 0;            // tokens to compute now
    std::span<const int32_t> block_table;  // physical device blocks, logical order
    bool wants_logits = false;             // logits of the last new token
    // Also the logits of the first num_prompt_logits new tokens (prompt logprobs), before the last token's row;
    // num_prompt_logits + wants_logits <= num_new_tokens, so no row is asked for twice.
    int64_t num_prompt_logits = 0;
    int64_t max_length = 0;  // prompt + max_tokens; picks LongRoPE's factors (0: unknown, the tokens so far)

    int64_t num_logits() const { return num_prompt_logits + (wants_logits ? 1 : 0); }
};

struct BatchLimits {
    int64_t max_num_tokens = 0;      // per step (max_num_batched_tokens), padding included
    int64_t max_num_sequences = 0;   // per step (max_num_seqs)
    int64_t max_num_logits = 0;      // logits rows per step
    int64_t max_blocks_per_seq = 0;  // block table width: ceil(max_model_len / block_size)
};

class ForwardBatchBuilder {
public:
    ForwardBatchBuilder(const BatchLimits& limits, int64_t block_size, RotaryLayout rotary,
                        MemoryKind memory = MemoryKind::kHost);

    // The step's batch, its rows padded to pad_tokens_to when that is larger. Checks every sequence against the
    // limits and its block table (a violation is a bug of the caller and aborts naming it).
    const ForwardBatch& build(std::span<const RunnerSequence> sequences, int64_t pad_tokens_to = 0);
    // A decode step in the fixed shape of a CUDA graph bucket: `bucket` tokens, sequences and logits rows whatever
    // the number of sequences (0 to bucket, each with one new token and its logits, no prompt logits), and
    // max_query_len 1, max_seq_len the longest the block tables allow, so every step of the bucket launches the same
    // kernels with the same arguments at the same addresses. Sequences past the real ones are empty padding
    // (length 0, no tokens); logits row i is sequence i's for the real ones.
    const ForwardBatch& build_decode_bucket(std::span<const RunnerSequence> sequences, int64_t bucket);
    // A batch of the given shape with zeroed contents (workspace sizing by a dry run).
    const ForwardBatch& build_shape(int64_t num_tokens, int64_t num_sequences, int64_t num_logits);

    // The same arrays at another base address (a device copy of the buffer, its zeros included).
    ForwardBatch rebased(void* base, Device device) const;
    // What the last build wrote: the arrays, one range of arrays_bytes from arrays_offset, and the block table's
    // rectangle [0, table_rows) x [0, table_cols) of entries that may be non-zero (rows of max_blocks entries from the
    // buffer's start). Every other byte of the buffer is zero.
    struct Written {
        size_t arrays_offset = 0;
        size_t arrays_bytes = 0;
        int64_t table_rows = 0;
        int64_t table_cols = 0;
    };
    const Written& written() const { return written_; }
    // The buffer (its host memory, for a device copy).
    const TensorView& buffer() const { return buffer_.view(); }
    // The buffer's size: the block table's area and the arrays of the largest step the limits allow.
    size_t capacity_bytes() const { return buffer_.view().nbytes(); }
    const BatchLimits& limits() const { return limits_; }
    int64_t block_size() const { return block_size_; }

private:
    ForwardBatch layout(void* base, Device device, int64_t t, int64_t s, int64_t l) const;
    // Packs the sequences into a layout of `rows` tokens, s sequences (>= the real ones) and l logits rows.
    const ForwardBatch& pack(std::span<const RunnerSequence> sequences, int64_t rows, int64_t s, int64_t l);
    void clear_last_build();

    BatchLimits limits_;
    int64_t block_size_;
    RotaryLayout rotary_;
    Tensor buffer_;
    ForwardBatch batch_;
    Written written_;
};

}  // namespace taco
