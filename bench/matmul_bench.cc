// CPU matmul throughput against the machine's memory bandwidth.
//   BM_MemoryCopy: parallel memcpy of 512 MiB into another 512 MiB (the ceiling a streaming kernel can reach).
//   BM_MemoryRead: parallel read-only sum over 1 GiB.
//   BM_PeakFmaAvx512: FMA throughput of one core, the ceiling for GEMM (per thread, CPU time).
//   BM_Gemv:       M = 1 (decode) on bf16 weights; weight_bytes/s is what a memory-bound GEMV should push.
//   BM_Gemm:       M = 128 / 512 (prefill) on bf16 weights; flop/s.
// The first argument of the matmul benchmarks is the ISA (0 scalar, 1 avx2, 2 avx512). GEMV reads its weights
// from a 1 GiB pool, a different slice each iteration, so they come from DRAM and not from a large L3.
//   build/<dir>/matmul_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {
namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kCopyBytes = 512 * kMiB;
constexpr size_t kWeightPoolBytes = 1024 * kMiB;

// Page-aligned, touched by all threads so pages are mapped before timing.
struct Buffer {
    explicit Buffer(size_t bytes)
        : size(bytes), data(static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))) {
        TACO_CHECK_MSG(data != nullptr, "out of host memory allocating {} bytes", bytes);
        const int64_t num_chunks = int64_t((bytes + kMiB - 1) / kMiB);
        ThreadPool::global().parallel_for(num_chunks, 1, [&](int64_t b, int64_t e) {
            const size_t begin = size_t(b) * kMiB;
            std::memset(data + begin, 0, std::min(bytes, size_t(e) * kMiB) - begin);
        });
    }
    ~Buffer() { std::free(data); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    size_t size;
    uint8_t* data;
};

// bf16 weights, values in [-1, 1) so no denormals or infinities reach the FMAs.
void fill_bf16(Buffer& b) {
    auto* w = reinterpret_cast<uint16_t*>(b.data);
    const int64_t count = int64_t(b.size / sizeof(uint16_t));
    ThreadPool::global().parallel_for(count, 1 << 20, [&](int64_t begin, int64_t end) {
        uint32_t state = uint32_t(begin) * 2654435761u + 1;
        for (int64_t i = begin; i < end; ++i) {
            state = state * 1664525u + 1013904223u;
            w[i] = f32_to_bf16(float(int32_t(state >> 8) - (1 << 23)) / float(1 << 23));
        }
    });
}

Buffer& weight_pool() {
    static Buffer pool(kWeightPoolBytes);
    static const bool filled = (fill_bf16(pool), true);
    (void)filled;
    return pool;
}

// x rows 64-byte aligned, as Tensor rows are when K is a multiple of 16: split cache-line loads of x would cost
// the GEMM about a third of its speed.
struct Activations {
    explicit Activations(int64_t count) : buffer(size_t(count) * sizeof(float)) {
        uint32_t state = 12345;
        for (int64_t i = 0; i < count; ++i) {
            state = state * 1664525u + 1013904223u;
            data()[i] = float(int32_t(state >> 8) - (1 << 23)) / float(1 << 23);
        }
    }
    float* data() const { return reinterpret_cast<float*>(buffer.data); }
    Buffer buffer;
};

bool skip_unsupported(benchmark::State& state, CpuIsa isa) {
    state.SetLabel(cpu_isa_name(isa));
    if (cpu_supports(isa)) return false;
    state.SkipWithError("ISA not supported by this CPU");
    return true;
}

void BM_MemoryCopy(benchmark::State& state) {
    Buffer src(kCopyBytes);
    Buffer dst(kCopyBytes);
    const int64_t num_chunks = int64_t(kCopyBytes / kMiB);
    for (auto _ : state) {
        ThreadPool::global().parallel_for(num_chunks, 1, [&](int64_t b, int64_t e) {
            std::memcpy(dst.data + size_t(b) * kMiB, src.data + size_t(b) * kMiB, size_t(e - b) * kMiB);
        });
        benchmark::ClobberMemory();
    }
    state.counters["copied_bytes/s"] = benchmark::Counter(
        double(kCopyBytes), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
    state.counters["read+write_bytes/s"] = benchmark::Counter(
        2.0 * double(kCopyBytes), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
    state.counters["threads"] = ThreadPool::global().num_threads();
}
BENCHMARK(BM_MemoryCopy)->UseRealTime()->Unit(benchmark::kMillisecond);

// Read-only streaming over 1 GiB with 256-bit loads: the closer ceiling for GEMV, which reads weights and
// writes almost nothing.
__attribute__((target("avx2"))) uint64_t sum_words(const uint8_t* data, size_t bytes) {
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    for (size_t i = 0; i + 128 <= bytes; i += 128)
        for (int a = 0; a < 4; ++a)
            acc[a] = _mm256_add_epi64(acc[a], _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 32 * a)));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3])));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

void BM_MemoryRead(benchmark::State& state) {
    if (!cpu_supports(CpuIsa::kAvx2)) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    Buffer& pool = weight_pool();
    const int64_t num_chunks = int64_t(pool.size / kMiB);
    std::vector<uint64_t> sums(static_cast<size_t>(num_chunks));
    for (auto _ : state) {
        ThreadPool::global().parallel_for(num_chunks, 1, [&](int64_t b, int64_t e) {
            for (int64_t c = b; c < e; ++c) sums[size_t(c)] = sum_words(pool.data + size_t(c) * kMiB, kMiB);
        });
        benchmark::DoNotOptimize(sums.data());
    }
    state.counters["read_bytes/s"] = benchmark::Counter(
        double(pool.size), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
}
BENCHMARK(BM_MemoryRead)->UseRealTime()->Unit(benchmark::kMillisecond);

// The FMA ceiling of one core: 16 independent chains of 512-bit FMAs, so latency never limits.
__attribute__((target("avx512f"))) void BM_PeakFmaAvx512(benchmark::State& state) {
    if (!cpu_supports(CpuIsa::kAvx512)) {
        state.SkipWithError("ISA not supported by this CPU");
        return;
    }
    constexpr int kChains = 16;
    constexpr int64_t kRounds = 1 << 20;
    for (auto _ : state) {
        __m512 acc[kChains];
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + float(c) * 1e-3f);
        const __m512 scale = _mm512_set1_ps(0.999999f), offset = _mm512_set1_ps(1e-7f);
        for (int64_t r = 0; r < kRounds; ++r)
            for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], scale, offset);
        // One value out of all chains, so none is dead and none lives in memory during the loop.
        __m512 total = acc[0];
        for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
        benchmark::DoNotOptimize(total);
    }
    state.counters["flop/s"] =
        benchmark::Counter(2.0 * 16 * kChains * double(kRounds), benchmark::Counter::kIsIterationInvariantRate,
                           benchmark::Counter::kIs1000);
}
BENCHMARK(BM_PeakFmaAvx512)->Unit(benchmark::kMillisecond);

// Args: isa, n (weight rows), k.
void BM_Gemv(benchmark::State& state) {
    const auto isa = CpuIsa(state.range(0));
    if (skip_unsupported(state, isa)) return;
    const int64_t n = state.range(1), k = state.range(2);
    const size_t weight_bytes = size_t(n * k) * sizeof(uint16_t);
    Buffer& pool = weight_pool();
    const size_t num_slices = std::max<size_t>(1, pool.size / weight_bytes);
    const Activations x(k);
    std::vector<float> y(static_cast<size_t>(n));
    size_t slice = 0;
    for (auto _ : state) {
        const MatmulArgs args{x.data(), pool.data + slice * weight_bytes, DType::kBF16, y.data(), 1, n, k};
        matmul_with_isa(isa, args);
        benchmark::DoNotOptimize(y.data());
        slice = (slice + 1) % num_slices;
    }
    state.counters["weight_bytes/s"] = benchmark::Counter(
        double(weight_bytes), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
}
BENCHMARK(BM_Gemv)
    ->ArgNames({"isa", "n", "k"})
    ->ArgsProduct({{0, 1, 2}, {4096}, {4096}})
    ->ArgsProduct({{0, 1, 2}, {14336}, {4096}})
    ->ArgsProduct({{0, 1, 2}, {4096}, {14336}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Args: isa, m (tokens), n, k.
void BM_Gemm(benchmark::State& state) {
    const auto isa = CpuIsa(state.range(0));
    if (skip_unsupported(state, isa)) return;
    const int64_t m = state.range(1), n = state.range(2), k = state.range(3);
    const Activations x(m * k);
    std::vector<float> y(static_cast<size_t>(m * n));
    const MatmulArgs args{x.data(), weight_pool().data, DType::kBF16, y.data(), m, n, k};
    for (auto _ : state) {
        matmul_with_isa(isa, args);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["flop/s"] = benchmark::Counter(
        2.0 * double(m * n * k), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
// The scalar path is left out: at ~1 GFLOP/s one M = 512 iteration would take tens of seconds.
BENCHMARK(BM_Gemm)
    ->ArgNames({"isa", "m", "n", "k"})
    ->ArgsProduct({{1, 2}, {128, 512}, {4096}, {4096}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace taco::cpu

BENCHMARK_MAIN();
