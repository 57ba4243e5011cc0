// What the CUDA kernels of kernels/cuda/*.cu share (C++17 device code: no tensor types, see launch.h): fp32 loads and
// stores of the activation dtypes (float, __half,
// __nv_bfloat16; one rounding to nearest even on the store), the dispatch of a runtime DType to a kernel template,
// the checked (programmatic where allowed) launch, device-side checks of index operands, and warp reductions in a fixed
// order (batch invariance: a row's reduction tree depends on the row's length only, never on how many rows are in the
// batch).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <utility>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/cuda/programmatic_launch.h"

// A broken contract of an index operand inside a kernel (a token id outside the vocabulary, a slot outside the
// cache): prints the message (from the lowest failing lane of each warp; blocks are 1-d) and stops the kernel, so
// the stream's next synchronisation aborts (DeviceStream names the error) instead of reading or writing out of
// bounds.
#define TACO_DEVICE_CHECK(cond, ...)                                                                              \
    do {                                                                                                          \
        if (!(cond)) {                                                                                            \
            const unsigned taco_lanes_below_ = (1u << (threadIdx.x % 32)) - 1u;                                   \
            if ((__activemask() & taco_lanes_below_) == 0) printf("taco-llm: device check failed: " __VA_ARGS__); \
            __trap();                                                                                             \
        }                                                                                                         \
    } while (0)

namespace taco::cuda {

constexpr int kWarpSize = 32;

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Queues kernel<<<grid, block, shared_bytes, stream>>>(args...) (programmatic_launch.h): with programmatic stream
// serialization where the device allows it, so the kernel must call grid_dependency_wait() first. Aborts naming the
// kernel when the launch fails.
template <class... Params, class... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Args&&... args) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = programmatic_launch_enabled() ? 1 : 0;
    const cudaError_t error = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
    if (error != cudaSuccess) cudaGetLastError();  // not sticky: clear it before aborting with the name
    TACO_CHECK_MSG(error == cudaSuccess, "CUDA kernel {} failed to launch: {}", name, cudaGetErrorString(error));
}

// The first statement of every kernel queued by launch_kernel, before any access to global memory and before any
// thread returns: waits until the kernels queued before it on the stream have completed and their writes are visible
// (a no-op when it was not launched early), then lets the next kernel start its own launch (it waits here in
// turn). Every thread calls it, so no grid can complete before the one it follows. (The decode attention and merge
// kernels call it after reading what was complete before the kernel they follow started: programmatic_launch.h.)
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Blocks of `threads` covering n items, at least one.
inline unsigned blocks_for(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

// Loads widen to fp32; stores round once (to nearest even) from fp32.
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

// A type as a value, so one generic lambda serves every dtype: dispatch_float(d, op, [&](auto t) { using T =
// typename decltype(t)::type; ... }).
template <class T>
struct TypeTag {
    using type = T;
};

// Calls f(TypeTag<T>{}) with the device type of an activation dtype (f32, f16, bf16); any other dtype aborts naming
// the op and the operand.
template <class F>
void dispatch_float(DType dtype, const char* op, const char* what, F&& f) {
    switch (dtype) {
        case DType::kF32: f(TypeTag<float>{}); return;
        case DType::kF16: f(TypeTag<__half>{}); return;
        case DType::kBF16: f(TypeTag<__nv_bfloat16>{}); return;
        case DType::kI8:
        case DType::kU8:
        case DType::kI32:
        case DType::kI64:
        case DType::kF8E4M3:
        case DType::kF8E5M2: break;
    }
    TACO_CHECK_MSG(false, "{}: {} has dtype {}, which no CUDA kernel of this op takes", op, what, dtype_name(dtype));
}

// Token t's slot in the paged KV cache (ops::write_kv_cache): -1 is padding, written nowhere; a slot past the cache's
// num_slots fails the device check.
__device__ __forceinline__ int64_t kv_slot(const int64_t* slot_mapping, int64_t t, int64_t num_slots) {
    const int64_t slot = slot_mapping[t];
    TACO_DEVICE_CHECK(slot < num_slots, "write_kv_cache: slot %lld outside the cache of %lld slots\n",
                      static_cast<long long>(slot), static_cast<long long>(num_slots));
    return slot;
}

// Butterfly reductions over the 32 lanes of a warp: every lane ends with the result, and the tree (lane i with
// lane i ^ 16, then ^ 8, ...) is the same on every call, so the sum is deterministic.
__device__ __forceinline__ float warp_sum(float v) {
    for (int mask = kWarpSize / 2; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int mask = kWarpSize / 2; mask > 0; mask /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
    return v;
}

// The sum of one value per thread over a block of blockDim.x threads (a multiple of 32, at most 1024): warps reduce
// by warp_sum, then warp 0 reduces the warps' sums in the same tree. `partials` is shared memory of 32 floats; every
// thread returns the sum. Contains __syncthreads: call it from every thread of the block.
__device__ __forceinline__ float block_sum(float v, float* partials) {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int num_warps = blockDim.x / kWarpSize;
    v = warp_sum(v);
    __syncthreads();  // partials may still be read by an earlier call
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    float total = lane < num_warps ? partials[lane] : 0.0f;
    total = warp_sum(total);
    return total;
}

}  // namespace taco::cuda
