// Row lookups on CUDA: embedding (a table row per token id, widened from the table's dtype and rounded once to the
// activation dtype) and gather_rows (rows of a tensor by index, copied as they are). One block per output row.
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kRowThreads = 256;

using cuda::to_f32;  // the activation dtypes' overloads beside the FP8 ones below

// FP8 table elements, decoded exactly as core/dtype.cc decodes them on the host.
struct F8E4M3 {
    uint8_t bits;
};
struct F8E5M2 {
    uint8_t bits;
};

__device__ __forceinline__ float to_f32(F8E4M3 v) {
    // E4M3FN: bias 7, no infinities, S.1111.111 is NaN.
    const uint32_t exponent = (v.bits >> 3) & 0xfu, mantissa = v.bits & 0x7u;
    float value;
    if (exponent == 0xf && mantissa == 0x7) {
        value = __int_as_float(0x7fc00000);
    } else if (exponent == 0) {
        value = ldexpf(float(mantissa), -9);
    } else {
        value = ldexpf(1.0f + float(mantissa) / 8.0f, int(exponent) - 7);
    }
    return (v.bits >> 7) ? -value : value;
}

__device__ __forceinline__ float to_f32(F8E5M2 v) {
    // E5M2 is the top byte of an IEEE half.
    return __half2float(__ushort_as_half(static_cast<unsigned short>(v.bits << 8)));
}

// Calls f(TypeTag<T>{}) with the device type of an embedding table's dtype.
template <class F>
void dispatch_table(DType dtype, F&& f) {
    switch (dtype) {
        case DType::kF8E4M3: f(TypeTag<F8E4M3>{}); return;
        case DType::kF8E5M2: f(TypeTag<F8E5M2>{}); return;
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kI8:
        case DType::kU8:
        case DType::kI32:
        case DType::kI64: dispatch_float(dtype, "embedding", "table", f); return;
    }
}

// out[t, :] = table[ids[t], :].  ids: [T]; table: [vocab, hidden]; out: [T, hidden]. Block t.
template <class TTable, class TOut>
__global__ void embedding_kernel(const int32_t* ids, const TTable* table, int64_t vocab, int64_t hidden, TOut* out) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x;
    const int32_t id = ids[t];
    TACO_DEVICE_CHECK(id >= 0 && id < vocab, "embedding: token id %d outside the vocabulary of %lld\n", id,
                      static_cast<long long>(vocab));
    const TTable* row = table + int64_t(id) * hidden;
    TOut* dst = out + t * hidden;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = from_f32<TOut>(to_f32(row[i]));
}

// out[r, :] = src[indices[r], :].  src: [src_rows, cols]; indices: [R]; out: [R, cols]. Block r.
template <class T>
__global__ void gather_rows_kernel(const T* src, int64_t src_rows, int64_t cols, const int32_t* indices, T* out) {
    grid_dependency_wait();
    const int64_t r = blockIdx.x;
    const int32_t index = indices[r];
    TACO_DEVICE_CHECK(index >= 0 && index < src_rows, "gather_rows: row %d of %lld\n", index,
                      static_cast<long long>(src_rows));
    const T* from = src + int64_t(index) * cols;
    T* to = out + r * cols;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) to[i] = from[i];
}

}  // namespace

namespace launch {

void embedding(void* stream, const int32_t* ids, int64_t tokens, const void* table, DType table_dtype, int64_t vocab,
               int64_t hidden, void* out, DType out_dtype) {
    if (tokens == 0) return;
    dispatch_table(table_dtype, [&](auto table_tag) {
        using TTable = typename decltype(table_tag)::type;
        dispatch_float(out_dtype, "embedding", "out", [&](auto out_tag) {
            using TOut = typename decltype(out_tag)::type;
            launch_kernel("embedding_kernel", embedding_kernel<TTable, TOut>, unsigned(tokens), kRowThreads, 0,
                          as_stream(stream), ids, static_cast<const TTable*>(table), vocab, hidden,
                          static_cast<TOut*>(out));
        });
    });
}

void gather_rows(void* stream, const void* src, DType dtype, int64_t src_rows, int64_t cols, const int32_t* indices,
                 int64_t rows, void* out) {
    if (rows == 0) return;
    dispatch_float(dtype, "gather_rows", "src", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("gather_rows_kernel", gather_rows_kernel<T>, unsigned(rows), kRowThreads, 0, as_stream(stream),
                      static_cast<const T*>(src), src_rows, cols, indices, static_cast<T*>(out));
    });
}

}  // namespace launch
}  // namespace taco::cuda
