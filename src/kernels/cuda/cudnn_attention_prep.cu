// The cuDNN attention graph's per-step inputs from the step's query_start (cudnn_attention.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_attention_prep.h"

namespace taco::cuda {
namespace {

__global__ void cudnn_attention_prep_kernel(const int32_t* query_start, const int32_t* seq_lens, int64_t num_seqs,
                                            int64_t bucket, int64_t row_elems, int32_t* seq_len_q, int32_t* seq_len_kv,
                                            int64_t* ragged_offsets, int32_t* ragged_i32) {
    for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s <= bucket;
         s += int64_t(gridDim.x) * blockDim.x) {
        const int64_t offset = int64_t(query_start[s < num_seqs ? s : num_seqs]) * row_elems;
        ragged_offsets[s] = offset;
        ragged_i32[s] = int32_t(offset);
        if (s < bucket) {
            seq_len_q[s] = s < num_seqs ? query_start[s + 1] - query_start[s] : 0;
            seq_len_kv[s] = s < num_seqs ? seq_lens[s] : 0;
        }
    }
}

}  // namespace

void launch_cudnn_attention_prep(const int32_t* query_start, const int32_t* seq_lens, int64_t num_seqs, int64_t bucket,
                                 int64_t row_elems, int32_t* seq_len_q, int32_t* seq_len_kv, int64_t* ragged_offsets,
                                 int32_t* ragged_offsets_i32, void* stream) {
    const int threads = 256;
    const int blocks = int((bucket + threads) / threads);
    cudnn_attention_prep_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
        query_start, seq_lens, num_seqs, bucket, row_elems, seq_len_q, seq_len_kv, ragged_offsets, ragged_offsets_i32);
    TACO_CUDA_CHECK(cudaGetLastError());
}

}  // namespace taco::cuda
