// The cuDNN attention graph's per-step device inputs (cudnn_attention.h). Plain C++ header, included by nvcc (C++17).
#pragma once

#include <cstdint>

namespace taco::cuda {

// From query_start [b + 1]: seq_len_q [b] and the ragged offsets [b + 1] of Q and O in elements
// (query_start * row_elems), in int64 and in int32 (the graph's variant reads one), on `stream` (a cudaStream_t).
void launch_cudnn_attention_prep(const int32_t* query_start, int64_t b, int64_t row_elems, int32_t* seq_len_q,
                                 int64_t* ragged_offsets, int32_t* ragged_offsets_i32, void* stream);

}  // namespace taco::cuda
