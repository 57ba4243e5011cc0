// What the CUDA micro-benchmarks share (cuda_gemm_bench.cc, cuda_attention_bench.cc): opening the GPU, and timing a
// call with device events around batches of calls. Included only where TACO_WITH_CUDA is set.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/cuda/cuda_backend.h"

namespace taco::cuda {

// The backend on device 0 and a stream with its context; an empty string, or why the GPU cannot be used.
inline std::string open_gpu(std::unique_ptr<DeviceStream>& stream, ExecContext& ctx) {
    const Status status = init_backend(0);
    if (!status.is_ok()) return status.message();
    auto made = DeviceStream::create();
    if (!made.is_ok()) return made.status().message();
    stream = std::move(made).value();
    ctx = stream->context(nullptr);
    return "";
}

// Times `body(i)` (i counting calls) on `stream`: `warmups` calls first (plans, caches, clocks), then per
// benchmark iteration `calls` calls between two events; the manual time is seconds per call.
template <class F>
void time_on_gpu(benchmark::State& state, cudaStream_t stream, int warmups, int calls, F&& body) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    int64_t i = 0;
    for (int w = 0; w < warmups; ++w) body(i++);
    for (auto _ : state) {
        cudaEventRecord(start, stream);
        for (int c = 0; c < calls; ++c) body(i++);
        cudaEventRecord(stop, stream);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        state.SetIterationTime(double(ms) / 1e3 / calls);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

}  // namespace taco::cuda
