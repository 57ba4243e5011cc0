// The offline benchmark runner (`taco_llm bench latency|batch|throughput`): token accounting, timing order and
// the weight footprint the GB/s and TFLOP/s figures are derived from.
#include "engine/offline_bench.h"

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace taco {
namespace {

using testing_util::make_engine;
using testing_util::model_dir;

TEST(OfflineBench, EveryRequestGetsExactlyItsTokensAndTimesAreOrdered) {
    auto engine = make_engine("llama");
    auto run = run_bench_workload(*engine, BenchWorkload{5, 12, 7, 3});
    ASSERT_TRUE(run.is_ok()) << run.status().message();
    EXPECT_EQ(run->num_requests, 5);
    EXPECT_EQ(run->prompt_tokens, 5 * 12);
    EXPECT_EQ(run->output_tokens, 5 * 7);
    EXPECT_LE(run->decode_tokens, run->output_tokens - 5);  // every request's first token is prefill
    EXPECT_GT(run->mean_ttft_s, 0);
    EXPECT_LE(run->p50_ttft_s, run->p99_ttft_s);
    EXPECT_LE(run->prefill_done_s, run->elapsed_s);
    EXPECT_GE(run->engine_steps, 7);  // at least one step per output token
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
    // The step phases per step: each ran, and a step's phases fit in the run's time per step.
    EXPECT_GT(run->step_forward_ms, 0);
    EXPECT_GT(run->step_output_ms, 0);
    EXPECT_GT(run->step_text_ms, 0);
    EXPECT_LE(
        run->step_schedule_ms + run->step_forward_ms + run->step_sample_ms + run->step_output_ms + run->step_text_ms,
        run->elapsed_s * 1e3 / double(run->engine_steps));
}

TEST(OfflineBench, RunsDrawFreshPromptsSoNoRunHitsAnothersPrefixCache) {
    auto engine = make_engine("llama");
    ASSERT_TRUE(run_bench_workload(*engine, BenchWorkload{1, 64, 2, 1}).is_ok());
    const int64_t hits = engine->stats().prefix_hits_device_tokens;
    ASSERT_TRUE(run_bench_workload(*engine, BenchWorkload{1, 64, 2, 2}).is_ok());
    EXPECT_EQ(engine->stats().prefix_hits_device_tokens, hits);
}

TEST(OfflineBench, BadWorkloadsAreClearErrors) {
    auto engine = make_engine("llama");
    auto empty = run_bench_workload(*engine, BenchWorkload{1, 0, 4, 0});
    ASSERT_FALSE(empty.is_ok());
    EXPECT_NE(empty.status().message().find("--input-len"), std::string::npos);
    auto too_long = run_bench_workload(*engine, BenchWorkload{1, 250, 100, 0});
    ASSERT_FALSE(too_long.is_ok());
    EXPECT_NE(too_long.status().message().find("maximum context length"), std::string::npos)
        << too_long.status().message();
}

TEST(OfflineBench, FootprintCountsEveryMatrixButTheInputTable) {
    // Golden llama: hidden 64, 4 heads / 2 kv heads of 16, intermediate 128, 2 layers, vocab 512, untied, bf16.
    const int64_t per_layer = 64 * 64 + 2 * (32 * 64) + 64 * 64 + 3 * (64 * 128);
    auto untied = model_footprint(model_dir("llama"), false);
    ASSERT_TRUE(untied.is_ok()) << untied.status().message();
    EXPECT_EQ(untied->matrix_params, 2 * per_layer + 512 * 64);
    EXPECT_EQ(untied->weight_bytes_per_step, 2 * untied->matrix_params);
    // Tied: the one table is the output head, read whole every step.
    auto tied = model_footprint(model_dir("llama_bias_tied"), true);
    ASSERT_TRUE(tied.is_ok()) << tied.status().message();
    EXPECT_EQ(tied->matrix_params, 2 * per_layer + 512 * 64);
}

}  // namespace
}  // namespace taco
