// Offline benchmarks through the engine (`taco_llm bench latency|batch|throughput`, BENCHMARKS.md): requests of
// random prompt tokens with ignore_eos go through Engine::submit -- the same path as the server -- and the
// stream's delta timestamps give TTFT, the decode rate and the overall rates. Weight-traffic (GB/s) and matrix
// throughput (TFLOP/s) are derived from the checkpoint's matrices, so a figure can be set against the roofline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace taco {

struct BenchWorkload {
    int64_t num_requests = 1;
    int64_t input_len = 1024;
    int64_t output_len = 128;
    uint64_t seed = 0;  // prompt tokens; each run draws fresh prompts so no run hits another's prefix cache
};

// Timing of one workload run. Times in seconds from the first submit.
struct BenchRun {
    int64_t num_requests = 0;
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    int64_t engine_steps = 0;
    double elapsed_s = 0;    // first submit -> last request finished
    double mean_ttft_s = 0;  // submit -> first token, averaged over requests
    double p50_ttft_s = 0, p99_ttft_s = 0;
    double prefill_done_s = 0;  // the moment every request had its first token
    int64_t decode_tokens = 0;  // tokens that arrived after prefill_done_s
    int64_t decode_steps = 0;   // engine steps after prefill_done_s (approximate: steps are counted at deltas)
    // The step thread's time per engine step of the run by phase, in ms (EngineStats::step_*_s): scheduling, the
    // forward pass (build and launch), sampling (with the GPU wait), the outputs' token stage and their text stage.
    double step_schedule_ms = 0, step_forward_ms = 0, step_sample_ms = 0, step_output_ms = 0, step_text_ms = 0;

    double decode_tokens_per_s() const;  // decode_tokens / (elapsed - prefill_done); 0 when no decode phase
    double output_tokens_per_s() const { return elapsed_s > 0 ? double(output_tokens) / elapsed_s : 0; }
    double total_tokens_per_s() const { return elapsed_s > 0 ? double(prompt_tokens + output_tokens) / elapsed_s : 0; }
};

// What one step of the model reads and computes, from its checkpoint's matrices.
struct ModelFootprint {
    int64_t matrix_params = 0;  // 2-D weights used per token (the input embedding table excluded: one row of it)
    int64_t weight_bytes_per_step = 0;  // bytes of those weights as stored
};

// Sums the checkpoint of `model_dir`'s 2-D tensors; the input embedding table counts only when it is also the
// output head (tied).
Result<ModelFootprint> model_footprint(const std::string& model_dir, bool tied_embeddings);

// Runs the workload: all requests are submitted at once and run to completion.
Result<BenchRun> run_bench_workload(Engine& engine, const BenchWorkload& workload);

}  // namespace taco
