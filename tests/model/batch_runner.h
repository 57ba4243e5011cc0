// Test helper: runs several sequences through the decoder in one ForwardBatch (or in chunks), with their own
// block tables, returning the logits of every computed token. Used to check batch invariance. Each sequence's
// max length (LongRoPE's choice of factors) is its number of ids, as the engine's prompt + max_tokens.
#pragma once

#include <vector>

#include "exec/forward_executor.h"
#include "model/decoder.h"

namespace taco::testing_util {

struct SequenceSpec {
    std::vector<int32_t> ids;
};

// One forward over all `sequences` together (each from position 0); logits[s][i] is the row of token i of
// sequence s. Blocks are handed out in a shuffled order so that physical placement differs from run to run.
std::vector<std::vector<std::vector<float>>> run_together(Decoder& decoder, const std::vector<SequenceSpec>& sequences,
                                                          int64_t block_size, uint32_t shuffle_seed);

// One sequence prefilled in chunks of `chunk` tokens (the last chunk may be shorter); logits of every token.
std::vector<std::vector<float>> run_chunked(Decoder& decoder, const std::vector<int32_t>& ids, int64_t chunk,
                                            int64_t block_size);

}  // namespace taco::testing_util
