// Sampler cost per token on a 151,936-entry vocabulary (Qwen2's), logits from a normal distribution with sd 3
// (roughly what small models produce): greedy, plain temperature, top-k, top-p, and everything at once.
#include <random>

#include <benchmark/benchmark.h>

#include "exec/sampler.h"

namespace taco {
namespace {

constexpr size_t kVocab = 151936;

const std::vector<float>& logits() {
    static const std::vector<float> values = [] {
        std::mt19937 rng(1);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        std::vector<float> v(kVocab);
        for (float& x : v) x = normal(rng);
        return v;
    }();
    return values;
}

void run(benchmark::State& state, const SamplingParams& params, bool with_history) {
    Sampler sampler(params, 1);
    std::vector<int32_t> prompt(2048), output(256);
    std::mt19937 rng(2);
    for (int32_t& t : prompt) t = int32_t(rng() % kVocab);
    for (int32_t& t : output) t = int32_t(rng() % kVocab);
    const SamplingContext context{with_history ? std::span<const int32_t>(prompt) : std::span<const int32_t>(),
                                  with_history ? std::span<const int32_t>(output) : std::span<const int32_t>(),
                                  {}};
    std::vector<float> row(kVocab);
    SampleLogprobs logprobs;
    for (auto _ : state) {
        row = logits();
        benchmark::DoNotOptimize(sampler.sample(row, context, &logprobs));
    }
}

void BM_SampleGreedy(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0;
    run(state, p, false);
}

void BM_SampleTemperature(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    run(state, p, false);
}

void BM_SampleTopK50(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    p.top_k = 50;
    run(state, p, false);
}

void BM_SampleTopP095(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    p.top_p = 0.95;
    run(state, p, false);
}

void BM_SampleEverything(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    p.top_k = 50;
    p.top_p = 0.95;
    p.min_p = 0.05;
    p.repetition_penalty = 1.1;
    p.frequency_penalty = 0.5;
    p.presence_penalty = 0.5;
    p.logprobs = 5;
    run(state, p, true);
}

BENCHMARK(BM_SampleGreedy)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleTemperature)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleTopK50)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleTopP095)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleEverything)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taco

BENCHMARK_MAIN();
