// BatchSampler cost per step on a 151,936-entry vocabulary (Qwen2's), logits from a normal distribution with
// sd 3 (roughly what small models produce; real, more peaked logits let the Gumbel cut-off rule out more):
// greedy, plain temperature, top-k, top-p and everything at once, for 1 and 32 rows (argument) of a step.
#include <random>

#include <benchmark/benchmark.h>

#include "core/tensor.h"
#include "exec/batch_sampler.h"

namespace taco {
namespace {

constexpr int64_t kVocab = 151936;

void run(benchmark::State& state, const SamplingParams& params, bool with_history) {
    const int64_t num_rows = state.range(0);
    Tensor logits = Tensor::empty({num_rows, kVocab}, DType::kF32);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int64_t i = 0; i < logits.numel(); ++i) logits.as<float>()[i] = normal(rng);
    std::vector<int32_t> prompt(2048), output(256);
    for (int32_t& t : prompt) t = int32_t(rng() % kVocab);
    for (int32_t& t : output) t = int32_t(rng() % kVocab);
    std::vector<SamplingRow> rows(static_cast<size_t>(num_rows));
    for (int64_t r = 0; r < num_rows; ++r) {
        SamplingRow& row = rows[size_t(r)];
        row.logits_row = r;
        row.params = &params;
        row.seed = uint64_t(r);
        if (with_history) {
            row.prompt_ids = prompt;
            row.output_ids = output;
        }
    }
    std::vector<SampledToken> out(rows.size());
    BatchSampler sampler;
    int64_t step = 0;
    for (auto _ : state) {
        for (SamplingRow& row : rows) row.draw_index = step;
        ++step;
        sampler.sample(logits, rows, out);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(state.iterations() * num_rows);
}

void BM_BatchGreedy(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0;
    run(state, p, false);
}

void BM_BatchTemperature(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    run(state, p, false);
}

void BM_BatchTopK50(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    p.top_k = 50;
    run(state, p, false);
}

void BM_BatchTopP095(benchmark::State& state) {
    SamplingParams p;
    p.temperature = 0.8;
    p.top_p = 0.95;
    run(state, p, false);
}

void BM_BatchEverything(benchmark::State& state) {
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

BENCHMARK(BM_BatchGreedy)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchTemperature)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchTopK50)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchTopP095)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchEverything)->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace taco

BENCHMARK_MAIN();
