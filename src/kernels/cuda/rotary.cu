// Rotary embedding on CUDA, in place, as the CPU backend (kernels/cpu/attention.cc): token t reads table row
// positions[t] + table_offsets[t]; each pair (x1, x2) of the first rotary_dim of a head becomes
// (x1 cos - x2 sin, x2 cos + x1 sin) in fp32, rounded once to the activation dtype. One block per token.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kThreads = 128;

// x: [tokens, heads, head_dim]; positions, table_offsets (or null): [tokens]; cos, sin: [table_rows, half].
template <class T>
__global__ void rotary_kernel(T* x, const int32_t* positions, const int32_t* table_offsets, const float* cos_table,
                              const float* sin_table, int64_t table_rows, int64_t heads, int64_t head_dim, int half,
                              bool neox_style) {
    const int64_t t = blockIdx.x;
    const int32_t position = positions[t];
    const int64_t row = int64_t(position) + (table_offsets != nullptr ? table_offsets[t] : 0);
    TACO_DEVICE_CHECK(position >= 0 && row >= 0 && row < table_rows,
                      "rotary_embedding: position %d (table row %lld) outside the rotary table of %lld rows\n",
                      position, static_cast<long long>(row), static_cast<long long>(table_rows));
    const float* cos_row = cos_table + row * half;
    const float* sin_row = sin_table + row * half;
    T* token = x + t * heads * head_dim;
    for (int64_t pair = threadIdx.x; pair < heads * half; pair += blockDim.x) {
        const int64_t h = pair / half;
        const int i = int(pair % half);
        T* v = token + h * head_dim;
        // neox: pairs (i, i + half); GPT-J style: pairs (2i, 2i + 1).
        T* a = neox_style ? v + i : v + 2 * i;
        T* b = neox_style ? v + i + half : v + 2 * i + 1;
        const float x1 = to_f32(*a), x2 = to_f32(*b);
        *a = from_f32<T>(x1 * cos_row[i] - x2 * sin_row[i]);
        *b = from_f32<T>(x2 * cos_row[i] + x1 * sin_row[i]);
    }
}

}  // namespace

namespace launch {

void rotary_embedding(void* stream, void* x, DType dtype, int64_t tokens, int64_t heads, int64_t head_dim,
                      const int32_t* positions, const int32_t* table_offsets, const float* cos_table,
                      const float* sin_table, int64_t table_rows, int rotary_dim, bool neox_style) {
    if (tokens == 0 || heads == 0) return;
    dispatch_float(dtype, "rotary_embedding", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        rotary_kernel<T><<<unsigned(tokens), kThreads, 0, as_stream(stream)>>>(
            static_cast<T*>(x), positions, table_offsets, cos_table, sin_table, table_rows, heads, head_dim,
            rotary_dim / 2, neox_style);
        TACO_CUDA_CHECK_LAUNCH("rotary_kernel");
    });
}

}  // namespace launch
}  // namespace taco::cuda
