// Paged attention on the GPU at the Llama-3.1-8B shape (32 query heads, 8 kv heads, head dim 128, bf16, blocks of
// 16), the tensor-core kernel against the CUDA cores' one (kernels/cuda/paged_attention.h), per layer:
//   BM_Prefill/kernel/len/capacity: one causal sequence of len tokens from position 0, its block table's width and
//                                   max_seq_len the capacity (0: len; the engine's are the whole capacity); TFLOP/s
//                                   counts 4 H D len^2 / 2.
//   BM_Decode/kernel/batch/context/capacity: batch sequences of one token at position context - 1, max_seq_len the
//                                   capacity (0: the context); KV_GBps counts the K and V bytes read once (issue 13:
//                                   >= 80% of the copy bandwidth at 32k context).
// kernel 0: what ops::paged_attention runs, 1: the CUDA cores, 2: the general tensor-core kernel for every step
// (prefill too: our kernel against cuDNN's), 3: the decode kernel for every decode step, 4: cuDNN's fused attention
// (cudnn_attention.h; first_call_ms is its first call, the plan's build included; skipped with cuDNN's reason where it
// cannot run). Split-KV as the op chooses it, with the op's scratch. Block tables are shuffled, so sequences' blocks
// are scattered over the cache as in serving.
//   build/cuda/cuda_attention_bench --benchmark_min_time=0.1
// Without the CUDA backend (or without a usable GPU) every benchmark reports the reason and skips.
#include <benchmark/benchmark.h>

#ifdef TACO_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "cuda_bench_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/paged_attention.h"

namespace taco::cuda {
namespace {

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlockSize = 16;

struct Problem {
    std::unique_ptr<DeviceStream> stream;
    ExecContext ctx;
    Tensor q, out, k_cache, v_cache, partials, query_start, seq_lens, positions, block_tables;
    ops::AttentionMetadata batch;
    std::string unavailable;
};

Tensor device_i32(const std::vector<int32_t>& values, std::initializer_list<int64_t> shape) {
    Tensor t = Tensor::empty(shape, DType::kI32, Device::kCuda);
    cudaMemcpy(t.view().data, values.data(), values.size() * 4, cudaMemcpyHostToDevice);
    return t;
}

// Random bf16 values in [-1, 1), never zeros (zeros time faster than real data).
void fill_random(Tensor& t, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> dist(-127, 127);
    std::vector<uint16_t> host(size_t(t.view().numel()));
    for (uint16_t& v : host) {
        const float f = float(dist(rng)) / 128.0f + 1.0f / 256.0f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        v = uint16_t(bits >> 16);
    }
    cudaMemcpy(t.view().data, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
}

// `seqs` sequences with `tokens` query tokens each ending at position context - 1; the step's max_seq_len is
// `capacity` (a CUDA graph's decode bucket: the whole KV capacity) or, when 0, the context.
Problem make_problem(int seqs, int tokens, int context, int capacity = 0) {
    Problem p;
    p.unavailable = open_gpu(p.stream, p.ctx);
    if (!p.unavailable.empty()) return p;
    const int t = seqs * tokens, blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
    const int num_blocks = seqs * blocks_per_seq;
    p.q = Tensor::empty({t, kHeads, kHeadDim}, DType::kBF16, Device::kCuda);
    p.out = Tensor::empty({t, kHeads, kHeadDim}, DType::kBF16, Device::kCuda);
    p.k_cache = Tensor::empty({num_blocks, kBlockSize, kKvHeads, kHeadDim}, DType::kBF16, Device::kCuda);
    p.v_cache = Tensor::empty({num_blocks, kBlockSize, kKvHeads, kHeadDim}, DType::kBF16, Device::kCuda);
    fill_random(p.q, 1);
    fill_random(p.k_cache, 2);
    fill_random(p.v_cache, 3);
    std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), std::mt19937(4));
    std::vector<int32_t> query_start, seq_lens, positions;
    for (int i = 0; i <= seqs; ++i) query_start.push_back(i * tokens);
    for (int i = 0; i < seqs; ++i) {
        seq_lens.push_back(context);
        for (int j = 0; j < tokens; ++j) positions.push_back(context - tokens + j);
    }
    p.query_start = device_i32(query_start, {seqs + 1});
    p.seq_lens = device_i32(seq_lens, {seqs});
    p.positions = device_i32(positions, {t});
    // Each sequence's row of the block tables is as wide as the capacity's blocks (the engine's are: its
    // max_blocks_per_seq), the blocks past its context 0.
    const int width = std::max(blocks_per_seq, (capacity + kBlockSize - 1) / kBlockSize);
    std::vector<int32_t> tables(size_t(seqs) * size_t(width), 0);
    for (int s = 0; s < seqs; ++s)
        std::copy_n(blocks.begin() + ptrdiff_t(s) * blocks_per_seq, blocks_per_seq,
                    tables.begin() + ptrdiff_t(s) * width);
    p.block_tables = device_i32(tables, {seqs, width});
    p.batch.query_start = p.query_start.view();
    p.batch.seq_lens = p.seq_lens.view();
    p.batch.positions = p.positions.view();
    p.batch.block_tables = p.block_tables.view();
    p.batch.max_query_len = tokens;
    p.batch.max_seq_len = capacity > 0 ? capacity : context;
    p.partials = Tensor::empty({int64_t(paged_attention_scratch_bytes(t, kHeads, kHeadDim, p.batch.max_seq_len))},
                               DType::kU8, Device::kCuda);
    cudaDeviceSynchronize();
    return p;
}

// Seconds per call of the op, by events around batches of calls.
void time_attention(benchmark::State& state, Problem& p, AttentionKernel kernel) {
    ops::AttentionParams params;
    params.scale = float(1.0 / std::sqrt(double(kHeadDim)));
    auto stream = static_cast<cudaStream_t>(p.stream->stream());
    const auto call = [&] {
        paged_attention_with(p.ctx, p.q.view(), p.k_cache.view(), p.v_cache.view(), p.batch, params, p.partials.view(),
                             SplitKv::kAuto, p.out.view(), kernel);
    };
    if (kernel == AttentionKernel::kCudnn) {
        const auto start = std::chrono::steady_clock::now();
        const std::string why =
            cudnn_paged_attention(p.ctx, p.q.view(), p.k_cache.view(), p.v_cache.view(), p.batch, params, p.out.view());
        if (!why.empty()) return state.SkipWithError(why.c_str());
        cudaStreamSynchronize(stream);
        state.counters["first_call_ms"] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    time_on_gpu(state, stream, 2, 10, [&](int64_t) { call(); });
    if (cudaGetLastError() != cudaSuccess) state.SkipWithError("a CUDA error");
}

// 0: what the op runs, 1: the CUDA cores, 2: the general tensor-core kernel for decode steps too, 3: the decode
// kernel for every decode step (2 against 3: the decode kernel's before/after).
AttentionKernel kernel_of(int64_t arg) {
    constexpr AttentionKernel kKernels[] = {AttentionKernel::kAuto, AttentionKernel::kCudaCores,
                                            AttentionKernel::kTiled, AttentionKernel::kDecode, AttentionKernel::kCudnn};
    return kKernels[arg];
}

void BM_Prefill(benchmark::State& state) {
    const int len = int(state.range(1));
    Problem p = make_problem(1, len, len, int(state.range(2)));
    if (!p.unavailable.empty()) return state.SkipWithError(p.unavailable.c_str());
    time_attention(state, p, kernel_of(state.range(0)));
    const double flops = 4.0 * kHeads * kHeadDim * double(len) * double(len) / 2;
    state.counters["TFLOPs"] =
        benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_Decode(benchmark::State& state) {
    const int batch = int(state.range(1)), context = int(state.range(2)), capacity = int(state.range(3));
    Problem p = make_problem(batch, 1, context, capacity);
    if (!p.unavailable.empty()) return state.SkipWithError(p.unavailable.c_str());
    time_attention(state, p, kernel_of(state.range(0)));
    const double bytes = 2.0 * batch * double(context) * kKvHeads * kHeadDim * 2;
    state.counters["KV_GBps"] =
        benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Which forms of cuDNN's attention graph (cudnn_attention.h) the loaded cuDNN has an engine for, on the 8B shape: one
// sequence of 1024 query tokens, block tables of 64 blocks (capacity 0) or of the 8B's 131072 tokens. Builds the
// plan only (build_ms); a form without an engine is reported with cuDNN's reason.
void BM_CudnnGraphProbe(benchmark::State& state) {
    std::unique_ptr<DeviceStream> stream;
    ExecContext ctx;
    if (const std::string why = open_gpu(stream, ctx); !why.empty()) return state.SkipWithError(why.c_str());
    const std::vector<SdpaGraphVariant> variants = cudnn_attention_probe_variants();
    if (state.range(0) >= int64_t(variants.size())) return state.SkipWithError("no such variant");
    const SdpaGraphVariant& v = variants[size_t(state.range(0))];
    const int64_t max_blocks = state.range(1) > 0 ? state.range(1) / kBlockSize : 1024 / kBlockSize;
    double build_ms = 0;
    const std::string why = cudnn_attention_probe(v, 1, 1024, kHeads, kKvHeads, kHeadDim, 1024 / kBlockSize, kBlockSize,
                                                  max_blocks, DType::kBF16, &build_ms);
    state.SetLabel(v.name());
    if (!why.empty()) return state.SkipWithError(why.c_str());
    for (auto _ : state) benchmark::DoNotOptimize(build_ms);
    state.counters["build_ms"] = build_ms;
}

BENCHMARK(BM_CudnnGraphProbe)
    ->ArgNames({"variant", "capacity"})
    ->ArgsProduct({benchmark::CreateDenseRange(0, 10, 1), {0}})
    ->Args({0, 131072})
    ->Iterations(1);

BENCHMARK(BM_Prefill)
    ->ArgNames({"kernel", "len", "capacity"})
    ->ArgsProduct({{0, 2, 4}, {128, 256, 512, 1024, 8192, 32768}, {0}})
    ->ArgsProduct({{0, 4}, {1024, 32768}, {131072}})
    ->Args({1, 1024, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
// capacity 131072: max_seq_len as in a CUDA graph's decode bucket of the 8B model (the split choice sees it).
BENCHMARK(BM_Decode)
    ->ArgNames({"kernel", "batch", "context", "capacity"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 8, 64}, {1024}, {0}})
    ->ArgsProduct({{0, 2, 3}, {1, 2, 8, 32, 64}, {1024}, {131072}})
    ->ArgsProduct({{0, 1, 2, 3}, {1}, {32768}, {0}})
    // The throughput workload's decode steps (BENCHMARKS.md: 1000 / 1000 at 256 sequences, 1,500 keys on average)
    // and the general tensor-core kernel there, which mixed steps (prefill chunks beside decode rows) run.
    ->ArgsProduct({{0, 2}, {256}, {1536}, {131072}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taco::cuda

#else

void BM_NoCuda(benchmark::State& state) { state.SkipWithError("built without the CUDA backend (TACO_CUDA=OFF)"); }
BENCHMARK(BM_NoCuda);

#endif

BENCHMARK_MAIN();
