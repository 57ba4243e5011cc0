// ALiBi (Press et al.; Bloom, Falcon-RW): head h adds slope[h] * (key position - query position) to its
// attention scores. Relative distances rather than transformers' absolute key positions: softmax is unchanged
// by a per-query constant, and the bias of a (query, key) pair then never depends on the batch.
#pragma once

#include <cstdint>
#include <vector>

namespace taco {

// transformers' build_alibi_tensor slopes, [num_heads]: for n heads, p = the largest power of two <= n,
// slope[i] = b^(i + 1) with b = 2^(-8 / p) for i < p; the remaining heads take the odd powers
// b'^1, b'^3, ... of b' = 2^(-4 / p).
std::vector<float> alibi_slopes(int64_t num_heads);

}  // namespace taco
