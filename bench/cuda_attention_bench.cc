// Paged attention on the GPU at the Llama-3.1-8B shape (32 query heads, 8 kv heads, head dim 128, bf16, blocks of
// 16), the tensor-core kernel against the CUDA cores' one (kernels/cuda/paged_attention.h), per layer:
//   BM_Prefill/kernel/len:          one causal sequence of len tokens from position 0; TFLOP/s counts 4 H D len^2 / 2.
//   BM_Decode/kernel/batch/context/capacity: batch sequences of one token at position context - 1, max_seq_len the
//                                   capacity (0: the context); KV_GBps counts the K and V bytes read once (issue 13:
//                                   >= 80% of the copy bandwidth at 32k context).
// kernel 0: what ops::paged_attention runs, 1: the CUDA cores, 2: the general tensor-core kernel for decode steps
// too, 3: the decode kernel for every decode step, 4: its one-warp build for every decode step. Split-KV as the op
// chooses it,
// with the op's scratch. Block tables are shuffled, so sequences' blocks are scattered over the cache as in serving.
//   build/cuda/cuda_attention_bench --benchmark_min_time=0.1
// Without the CUDA backend (or without a usable GPU) every benchmark reports the reason and skips.
#include <benchmark/benchmark.h>

#ifdef TACO_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "cuda_bench_util.h"
#include "kernels/cuda/cuda_backend.h"
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
    p.block_tables = device_i32(blocks, {seqs, blocks_per_seq});
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
    time_on_gpu(state, stream, 2, 10, [&](int64_t) { call(); });
    if (cudaGetLastError() != cudaSuccess) state.SkipWithError("a CUDA error");
}

// 0: what the op runs, 1: the CUDA cores, 2: the general tensor-core kernel for decode steps too, 3: the decode
// kernel for every decode step (2 against 3: the decode kernel's before/after).
AttentionKernel kernel_of(int64_t arg) {
    constexpr AttentionKernel kKernels[] = {AttentionKernel::kAuto, AttentionKernel::kCudaCores,
                                            AttentionKernel::kTiled, AttentionKernel::kDecode,
                                            AttentionKernel::kDecodeOneWarp};
    return kKernels[arg];
}

void BM_Prefill(benchmark::State& state) {
    const int len = int(state.range(1));
    Problem p = make_problem(1, len, len);
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

BENCHMARK(BM_Prefill)
    ->ArgNames({"kernel", "len"})
    ->ArgsProduct({{0, 1}, {1024, 8192}})
    ->Args({0, 32768})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
// capacity 131072: max_seq_len as in a CUDA graph's decode bucket of the 8B model (the split choice sees it).
BENCHMARK(BM_Decode)
    ->ArgNames({"kernel", "batch", "context", "capacity"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 8, 64}, {1024}, {0}})
    ->ArgsProduct({{0, 2, 3, 4}, {1, 2, 8, 32, 64}, {1024}, {131072}})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1}, {32768}, {0}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taco::cuda

#else

void BM_NoCuda(benchmark::State& state) { state.SkipWithError("built without the CUDA backend (TACO_CUDA=OFF)"); }
BENCHMARK(BM_NoCuda);

#endif

BENCHMARK_MAIN();
