// The cuDNN attention graph's per-step device inputs (cudnn_attention.h). Plain C++ header, included by nvcc (C++17).
#pragma once

#include <cstdint>

namespace taco::cuda {

// From a step's query_start [num_seqs + 1] and seq_lens [num_seqs], a plan's inputs for `bucket` >= num_seqs
// sequences: seq_len_q and seq_len_kv [bucket] (0 and 0 past the step's sequences) and the ragged offsets [bucket + 1]
// of Q and O in elements (query_start * row_elems; the last offset repeated past them), in int64 and in int32 (the
// graph's variant reads one), on `stream` (a cudaStream_t).
void launch_cudnn_attention_prep(const int32_t* query_start, const int32_t* seq_lens, int64_t num_seqs, int64_t bucket,
                                 int64_t row_elems, int32_t* seq_len_q, int32_t* seq_len_kv, int64_t* ragged_offsets,
                                 int32_t* ragged_offsets_i32, void* stream);

}  // namespace taco::cuda
