// Elementwise ops on CUDA: residual add, scaling, soft-capping and the activations (plain and gated). Each element is
// widened to fp32, computed with the CPU backend's formula (kernels/cpu/basic_ops.cc, pointwise_ops.cc) and rounded
// once to its dtype. Flat grid-stride loops over the elements; operands are contiguous (ops.cc checks).
#include <cstdint>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

using launch::ActivationKind;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;  // grid-stride beyond this

unsigned flat_blocks(int64_t n) {
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class T>
__global__ void add_kernel(T* x, const T* y, int64_t n) {
    grid_dependency_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = from_f32<T>(to_f32(x[i]) + to_f32(y[i]));
}

template <class T>
__global__ void scale_kernel(T* x, float s, int64_t n) {
    grid_dependency_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = from_f32<T>(to_f32(x[i]) * s);
}

// As transformers: divide, tanh, multiply (not a precomputed reciprocal).
template <class T>
__global__ void softcap_kernel(T* x, float cap, int64_t n) {
    grid_dependency_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = from_f32<T>(tanhf(to_f32(x[i]) / cap) * cap);
}

// out = act(gate) * up; out may alias gate (each element is read before it is written, by the same thread).
template <class T>
__global__ void gated_activation_kernel(const T* gate, const T* up, ActivationKind act, T* out, int64_t n) {
    grid_dependency_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = from_f32<T>(activate(to_f32(gate[i]), act) * to_f32(up[i]));
}

template <class T>
__global__ void activation_kernel(T* x, ActivationKind act, int64_t n) {
    grid_dependency_wait();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = from_f32<T>(activate(to_f32(x[i]), act));
}

}  // namespace

namespace launch {

void add_inplace(void* stream, void* x, const void* y, DType dtype, int64_t n) {
    if (n == 0) return;
    dispatch_float(dtype, "add_inplace", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("add_kernel", add_kernel<T>, flat_blocks(n), kThreads, 0, as_stream(stream), static_cast<T*>(x),
                      static_cast<const T*>(y), n);
    });
}

void scale_inplace(void* stream, void* x, DType dtype, int64_t n, float s) {
    if (n == 0) return;
    dispatch_float(dtype, "scale_inplace", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("scale_kernel", scale_kernel<T>, flat_blocks(n), kThreads, 0, as_stream(stream),
                      static_cast<T*>(x), s, n);
    });
}

void softcap_inplace(void* stream, void* x, DType dtype, int64_t n, float cap) {
    if (n == 0) return;
    dispatch_float(dtype, "softcap_inplace", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("softcap_kernel", softcap_kernel<T>, flat_blocks(n), kThreads, 0, as_stream(stream),
                      static_cast<T*>(x), cap, n);
    });
}

void gated_activation(void* stream, const void* gate, const void* up, void* out, DType dtype, int64_t n,
                      ActivationKind act) {
    if (n == 0) return;
    dispatch_float(dtype, "gated_activation", "gate", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("gated_activation_kernel", gated_activation_kernel<T>, flat_blocks(n), kThreads, 0,
                      as_stream(stream), static_cast<const T*>(gate), static_cast<const T*>(up), act,
                      static_cast<T*>(out), n);
    });
}

void activation_inplace(void* stream, void* x, DType dtype, int64_t n, ActivationKind act) {
    if (n == 0) return;
    dispatch_float(dtype, "activation_inplace", "x", [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_kernel("activation_kernel", activation_kernel<T>, flat_blocks(n), kThreads, 0, as_stream(stream),
                      static_cast<T*>(x), act, n);
    });
}

}  // namespace launch
}  // namespace taco::cuda
