// One scheduler step (schedule + update) with 256 running requests in decode, blocks growing as tokens are
// appended, prefix caching on. Target (issue C): <= 50 us per step.
#include <benchmark/benchmark.h>

#include "sched/scheduler.h"

namespace taco {
namespace {

void BM_SchedulerStep(benchmark::State& state) {
    const int64_t num_requests = state.range(0);
    KvCacheManager kv(KvCacheConfig{int64_t(num_requests * 64), 0, 16, true});
    SchedulerConfig config;
    config.max_num_batched_tokens = 8192;
    config.max_num_seqs = num_requests;
    config.max_model_len = 1024;
    Scheduler scheduler(config, kv);
    for (int64_t i = 0; i < num_requests; ++i) {
        auto r = std::make_unique<Request>();
        r->id = RequestId(i + 1);
        for (int t = 0; t < 200; ++t)
            r->token_ids.push_back(int32_t((t < 100 ? 7 : i) * 31 + t));  // shared system prompt
        r->num_prompt_tokens = 200;
        r->max_total_tokens = 1000;
        (void)scheduler.add_request(std::move(r));
    }
    // Prefill everything first.
    auto step = [&] {
        SchedulerOutput out = scheduler.schedule();
        std::vector<Request*> sampling;
        for (const auto& s : out.scheduled)
            if (s.samples()) sampling.push_back(s.request);
        scheduler.update_after_step(out);
        for (Request* r : sampling) r->token_ids.push_back(int32_t(r->num_tokens()));
        return out.scheduled.size();
    };
    while (scheduler.num_waiting() > 0) step();
    step();
    int64_t steps = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(step());
        if (++steps == 700) {  // before requests reach their length, start over
            state.PauseTiming();
            state.SkipWithError("ran past the request length");
            break;
        }
    }
    state.counters["running"] = double(scheduler.num_running());
}
BENCHMARK(BM_SchedulerStep)->Arg(256)->Unit(benchmark::kMicrosecond)->Iterations(500);

}  // namespace
}  // namespace taco

BENCHMARK_MAIN();
