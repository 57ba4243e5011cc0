// ForwardBatch: everything one forward pass needs, as views into one persistent buffer that the builder in exec/
// fills once per step (ARCHITECTURE.md, "ForwardBatch"). Tokens of several sequences are flattened; each
// sequence's new tokens are contiguous. Prefill, chunked prefill, prefix hits and decode are all the same shape of
// input. Rows past the real tokens are padding: token id 0, position 0, slot -1 (the KV write skips it). The same
// step shape always gets the same addresses, and on a GPU what a step wrote is uploaded with two copies.
#pragma once

#include <cstdint>

#include "kernels/ops.h"

namespace taco {

struct ForwardBatch {
    int64_t num_tokens = 0;     // T: rows of the per-token views, padding included
    int64_t num_sequences = 0;  // S
    TensorView token_ids;       // [T] i32
    TensorView slot_mapping;    // [T] i64: physical KV slot (block * block_size + offset), -1 = padding
    // [T] i32: the rotary table row offset of each token: LongRoPE's long factors sit after the short ones in one
    // table, and a sequence whose whole length (prompt + max_tokens) passes the threshold reads them at every
    // position; 0 for every other kind.
    TensorView rotary_offsets;
    TensorView logits_indices;         // [L] i32: rows of [0, T) whose logits are wanted, in output order
    ops::AttentionMetadata attention;  // positions [T], query_start [S + 1], seq_lens [S], block_tables [S, max_blocks]

    const TensorView& positions() const { return attention.positions; }
    int64_t num_logits() const { return logits_indices.shape[0]; }
};

// How the decoder's rotary table is laid out, which the builder needs for rotary_offsets.
struct RotaryLayout {
    int64_t long_rope_threshold = 0;  // 0: one table; else sequences longer than this read the long rows
    int32_t long_table_offset = 0;    // the row where the long table starts
};

}  // namespace taco
