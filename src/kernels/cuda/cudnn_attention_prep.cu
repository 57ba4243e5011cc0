// The cuDNN attention graph's per-step inputs from the step's query_start (cudnn_attention.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_attention_prep.h"

namespace taco::cuda {
namespace {

__global__ void cudnn_attention_prep_kernel(const int32_t* query_start, int64_t b, int64_t row_elems,
                                            int32_t* seq_len_q, int64_t* ragged_offsets, int32_t* ragged_i32) {
    for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s <= b; s += int64_t(gridDim.x) * blockDim.x) {
        ragged_offsets[s] = int64_t(query_start[s]) * row_elems;
        ragged_i32[s] = int32_t(int64_t(query_start[s]) * row_elems);
        if (s < b) seq_len_q[s] = query_start[s + 1] - query_start[s];
    }
}

}  // namespace

void launch_cudnn_attention_prep(const int32_t* query_start, int64_t b, int64_t row_elems, int32_t* seq_len_q,
                                 int64_t* ragged_offsets, int32_t* ragged_offsets_i32, void* stream) {
    const int threads = 256;
    const int blocks = int((b + threads) / threads);
    cudnn_attention_prep_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        query_start, b, row_elems, seq_len_q, ragged_offsets, ragged_offsets_i32);
    TACO_CUDA_CHECK(cudaGetLastError());
}

}  // namespace taco::cuda
