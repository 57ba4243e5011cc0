// ForwardBatch: everything one forward pass needs, built once per step by the runner and passed by const
// reference (no global context). Tokens of several sequences are flattened; each sequence's new tokens are
// contiguous. Prefill, chunked prefill, prefix hits and decode are all the same shape of input.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace taco {

struct ForwardBatch {
    std::vector<int32_t> token_ids;       // [T]
    ops::AttentionBatch attention;        // positions [T], query_start [S + 1], block_tables [S]
    std::vector<int64_t> slot_mapping;    // [T]: physical KV slot (block * block_size + offset) of each token
    std::vector<int32_t> logits_indices;  // rows of [0, T) whose logits are wanted, in output order
    // [S] or empty: the most tokens each sequence can reach (prompt + max_tokens). LongRoPE picks its short or long
    // factors from it, so a request keeps one table from its first chunk to its last token.
    std::vector<int64_t> max_lengths;

    int64_t num_tokens() const { return int64_t(token_ids.size()); }
    int64_t num_sequences() const { return int64_t(attention.block_tables.size()); }
};

}  // namespace taco
