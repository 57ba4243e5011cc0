// The decode GEMMs of the Llama-3.1-8B shape on the GPU, against the device's copy bandwidth (BENCHMARKS.md, issue 13's
// skinny-GEMM target: >= 85% of the copy bandwidth on every decode matrix).
//   BM_DeviceCopy:  cudaMemcpyAsync of 1 GiB device to device; bytes read + written per second (the ceiling).
//   BM_Skinny:      the skinny kernel (kernels/cuda/skinny_gemm.h) as ops::matmul runs it, M rows of bf16 x against
//                   an N x K bf16 matrix: its bulk-copy build on Hopper, else its register build.
//   BM_SkinnyRegisters: the register build on any GPU (the bulk build's before, side by side).
//   BM_SkinnyBulk:  the bulk-copy build's tunings: arguments M, N, K, stages, blocks per multiprocessor.
//   BM_Cublas:      the same product through cuBLASLt's cached plan (what ops::matmul runs for M > 16), also at the
//                   batch decode shapes M = 32 .. 256.
//   BM_GatedUp:     the MLP's gate / up (14336 x 4096 each) and SiLU gating at M = 1..16, fused or not.
//   BM_CublasCandidate: each allowed cuBLASLt candidate at the batch shapes (arguments M, N, K, candidate index).
// Arguments: M, N, K. Weights rotate through a 1 GiB pool so they come from HBM, not from the 50 MB L2. Counters:
// weight_GBps (weight bytes per second; over BM_DeviceCopy's rw_GBps: the fraction of the copy bandwidth).
//   build/cuda/cuda_gemm_bench --benchmark_min_time=0.2s
// Without the CUDA backend (or without a usable GPU) every benchmark reports the reason and skips.
#include <benchmark/benchmark.h>

#ifdef TACO_WITH_CUDA
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <utility>

#include "core/tensor.h"
#include "cuda_bench_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/gemm_plan_cache.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/skinny_gemm.h"

namespace taco::cuda {
namespace {

constexpr size_t kPoolBytes = size_t(1) << 30;
constexpr int64_t kMaxRows = 256;  // the largest M: batch_shapes'

struct Gpu {
    std::unique_ptr<DeviceStream> stream;
    ExecContext ctx;
    Tensor pool, x, y;  // weights pool (bf16), x [256, 14336] bf16, y [256, 128256] f32
    std::string unavailable;
};

Gpu& gpu() {
    static Gpu g = [] {
        Gpu made;
        made.unavailable = open_gpu(made.stream, made.ctx);
        if (!made.unavailable.empty()) return made;
        made.pool = Tensor::empty({int64_t(kPoolBytes / 2)}, DType::kBF16, Device::kCuda);
        made.x = Tensor::empty({kMaxRows, 14336}, DType::kBF16, Device::kCuda);
        made.y = Tensor::empty({kMaxRows, 128256}, DType::kF32, Device::kCuda);
        // Small values (all bits 0x3c00 = bf16 0.0078125): no infinities or denormals in the sums.
        cudaMemset(made.pool.view().data, 0x3c, kPoolBytes);
        cudaMemset(made.x.view().data, 0x3c, made.x.view().nbytes());
        cudaDeviceSynchronize();
        return made;
    }();
    return g;
}

// Times `body(iteration)`: 3 warm-up calls, then batches of 20 (cuda_bench_util.h).
template <class F>
void time_calls(benchmark::State& state, F&& body) {
    time_on_gpu(state, static_cast<cudaStream_t>(gpu().stream->stream()), 3, 20, body);
}

void BM_DeviceCopy(benchmark::State& state) {
    Gpu& g = gpu();
    if (!g.unavailable.empty()) return state.SkipWithError(g.unavailable.c_str());
    auto stream = static_cast<cudaStream_t>(g.stream->stream());
    auto* base = static_cast<uint8_t*>(g.pool.view().data);
    time_calls(state, [&](int64_t) {
        cudaMemcpyAsync(base + kPoolBytes / 2, base, kPoolBytes / 2, cudaMemcpyDeviceToDevice, stream);
    });
    // Bytes read + written per call: half the pool each.
    state.counters["rw_GBps"] = benchmark::Counter(double(kPoolBytes), benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::kIs1000);
}

// The weight matrix of iteration i: consecutive N x K slices of the pool, wrapping.
const void* weights(int64_t i, int64_t n, int64_t k) {
    const size_t bytes = size_t(n * k) * 2, slots = kPoolBytes / bytes;
    return static_cast<uint8_t*>(gpu().pool.view().data) + size_t(i) % slots * bytes;
}

void report(benchmark::State& state, int64_t n, int64_t k) {
    state.counters["weight_GBps"] = benchmark::Counter(double(n * k * 2), benchmark::Counter::kIsIterationInvariantRate,
                                                       benchmark::Counter::kIs1000);
}

void run_skinny(benchmark::State& state, int64_t m, int64_t n, int64_t k, const SkinnyTuning& tuning) {
    Gpu& g = gpu();
    if (!g.unavailable.empty()) return state.SkipWithError(g.unavailable.c_str());
    if (tuning.kernel == SkinnyTuning::Kernel::kBulkCopy && !skinny_bulk_available())
        return state.SkipWithError("no bulk-copy build on this GPU (compute capability 9.0 and later)");
    time_calls(state, [&](int64_t i) {
        skinny_gemm(g.x.view().data, weights(i, n, k), nullptr, g.y.view().data, m, n, k, DType::kBF16,
                    n == 128256 ? DType::kF32 : DType::kBF16, g.stream->stream(), tuning);
    });
    report(state, n, k);
}

void BM_Skinny(benchmark::State& state) { run_skinny(state, state.range(0), state.range(1), state.range(2), {}); }

void BM_SkinnyRegisters(benchmark::State& state) {
    run_skinny(state, state.range(0), state.range(1), state.range(2), {SkinnyTuning::Kernel::kRegisters, 0, 0});
}

void BM_SkinnyBulk(benchmark::State& state) {
    run_skinny(state, state.range(0), state.range(1), state.range(2),
               {SkinnyTuning::Kernel::kBulkCopy, int(state.range(3)), int(state.range(4))});
}

// BM_Cublas's plan, or with `candidate` >= 0 that allowed candidate of the heuristic (GemmKey::candidate).
void run_cublas(benchmark::State& state, int candidate) {
    Gpu& g = gpu();
    if (!g.unavailable.empty()) return state.SkipWithError(g.unavailable.c_str());
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    GemmKey key;
    key.m = m, key.n = n, key.k = k, key.in_dtype = DType::kBF16;
    key.out_dtype = n == 128256 ? DType::kF32 : DType::kBF16;
    key.workspace_bytes = g.ctx.blas_workspace.nbytes();
    cudaGetDevice(&key.device);
    auto handle = static_cast<cublasLtHandle_t>(g.ctx.blas_handle);
    if (candidate >= GemmPlan::allowed_candidates(handle, key))
        return state.SkipWithError("past the heuristic's last allowed candidate");
    key.candidate = candidate;
    const GemmPlan& plan = GemmPlanCache::global().get(handle, key, nullptr);
    state.SetLabel(plan.describe());
    auto stream = static_cast<cudaStream_t>(g.stream->stream());
    time_calls(state, [&](int64_t i) {
        plan.run(handle, g.x.view().data, weights(i, n, k), nullptr, g.y.view().data, g.ctx.blas_workspace.data,
                 stream);
    });
    report(state, n, k);
}

void BM_Cublas(benchmark::State& state) { run_cublas(state, -1); }

// The MLP's gate / up and its activation at the decode shapes (arguments M, fused): fused, skinny_gated (one launch,
// gate and up never written); else the gate / up launch and the activation's kernel, as ops::gated_projection runs
// them by default. weight_GBps counts both matrices.
void BM_GatedUp(benchmark::State& state) {
    Gpu& g = gpu();
    if (!g.unavailable.empty()) return state.SkipWithError(g.unavailable.c_str());
    const int64_t m = state.range(0), n = 14336, k = 4096;
    const bool fused = state.range(1) != 0;
    if (fused && !skinny_gated_applies(m, n, k, DType::kBF16, g.x.view().data, g.pool.view().data, g.pool.view().data))
        return state.SkipWithError("skinny_gated does not take this shape here");
    auto* gate = static_cast<uint8_t*>(g.y.view().data);  // [m, n] bf16 each, inside y's f32 buffer
    uint8_t* up = gate + size_t(m * n) * 2;
    uint8_t* out = up + size_t(m * n) * 2;
    time_calls(state, [&](int64_t i) {
        const void* w_gate = weights(2 * i, n, k);
        const void* w_up = weights(2 * i + 1, n, k);
        if (fused) {
            const SkinnyGated p{
                g.x.view().data, w_gate, nullptr, w_up, nullptr, out, m, n, k, launch::ActivationKind::kSilu};
            skinny_gated(p, DType::kBF16, g.stream->stream());
            return;
        }
        const SkinnyOutput outs[] = {{w_gate, nullptr, gate, n}, {w_up, nullptr, up, n}};
        skinny_gemm_group(g.x.view().data, outs, 2, m, k, DType::kBF16, DType::kBF16, g.stream->stream());
        launch::gated_activation(g.stream->stream(), gate, up, out, DType::kBF16, m * n, launch::ActivationKind::kSilu);
    });
    state.counters["weight_GBps"] = benchmark::Counter(
        double(2 * n * k * 2), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Every allowed candidate of the heuristic (argument 4: its index), to see how far the rule's choice is from the
// fastest at the batch decode shapes; the label names each one's configuration.
void BM_CublasCandidate(benchmark::State& state) { run_cublas(state, int(state.range(3))); }

// The 8B model's decode matrices (N, K): fused qkv, o_proj, gate / up, fused gate+up, down, lm_head.
constexpr std::pair<int64_t, int64_t> kDecodeMatrices[] = {{6144, 4096},  {4096, 4096},  {14336, 4096},
                                                           {28672, 4096}, {4096, 14336}, {128256, 4096}};

void decode_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t m : {1, 2, 4, 8, 16})
        for (auto [n, k] : kDecodeMatrices) b->Args({m, n, k});
}

// cuBLASLt at the batch decode shapes (bs 32 to 256 running sequences: BENCHMARKS.md's batch and throughput
// workloads), where the step's GEMMs are still mostly weight traffic: how near the copy bandwidth they run.
void batch_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t m : {32, 64, 128, 256})
        for (auto [n, k] : kDecodeMatrices) b->Args({m, n, k});
}

void batch_candidates(benchmark::internal::Benchmark* b) {
    for (int64_t m : {32, 64, 128, 256})
        for (auto [n, k] : kDecodeMatrices)
            for (int64_t candidate = 0; candidate < 32; ++candidate) b->Args({m, n, k, candidate});
}

// The bulk build's ring depth and blocks per multiprocessor on each decode matrix at M = 1, and the first default
// (8, 1) against two blocks per multiprocessor (the default since bench/results/h100-2026-12-07g) at M = 4, 8 and 16
// (the build is chosen by N and K alone, so a tuning or a build that wins at M = 1 must not lose at the other decode
// batch sizes; BM_SkinnyRegisters is the register build there).
void bulk_tunings(benchmark::internal::Benchmark* b) {
    for (auto [n, k] : kDecodeMatrices)
        for (auto [stages, per_sm] : {std::pair{4, 1}, {8, 1}, {12, 1}, {13, 1}, {3, 2}, {4, 2}, {6, 2}})
            b->Args({1, n, k, stages, per_sm});
    for (int64_t m : {4, 8, 16})
        for (auto [n, k] : kDecodeMatrices)
            for (auto [stages, per_sm] : {std::pair{8, 1}, {3, 2}, {4, 2}, {6, 2}}) b->Args({m, n, k, stages, per_sm});
}

BENCHMARK(BM_DeviceCopy)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Skinny)->Apply(decode_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SkinnyRegisters)->Apply(decode_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SkinnyBulk)->Apply(bulk_tunings)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cublas)->Apply(decode_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cublas)->Apply(batch_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GatedUp)->ArgsProduct({{1, 4, 8, 16}, {0, 1}})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CublasCandidate)->Apply(batch_candidates)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taco::cuda

#else

namespace {
void BM_NoCuda(benchmark::State& state) { state.SkipWithError("built without the CUDA backend (TACO_CUDA=OFF)"); }
BENCHMARK(BM_NoCuda);
}  // namespace

#endif

BENCHMARK_MAIN();
