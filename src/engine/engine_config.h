// EngineConfig: everything `taco_llm generate/serve/bench` passes to the engine, with vLLM's defaults. Flags a
// user may leave out where the default depends on the device are optional (nullopt: the device's default).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "engine/model_loading.h"
#include "sched/scheduler.h"

namespace taco {

struct EngineConfig {
    std::string model_dir;
    // vLLM's --tokenizer: the folder whose tokenizer files (tokenizer.json / tokenizer.model / vocab.json) the engine
    // loads; empty: model_dir's own, if it has any. A folder given here must hold a tokenizer.
    std::string tokenizer_dir;
    // Where and how the weights are loaded (engine/model_loading.h).
    DeviceChoice device = DeviceChoice::kAuto;
    std::optional<DType> dtype;  // nullopt: auto (the checkpoint's; fp32 checkpoints in bf16 on CUDA)
    LoadFormat load_format = LoadFormat::kAuto;
    bool show_load_progress = false;  // a progress bar of the weight upload on stderr

    int64_t max_model_len = 0;  // 0: derived from the config as vLLM does
    int64_t max_num_batched_tokens = 8192;
    int64_t max_num_seqs = 256;
    bool enable_chunked_prefill = true;
    int64_t long_prefill_token_threshold = 0;  // > 0: tokens one request computes per step at most (vLLM's)
    // vLLM's --max-num-partial-prefills / --max-long-partial-prefills, each at least 1 (SchedulerConfig has what they
    // bound). nullopt (not given): no bound but the token budget; the long limit given alone bounds long prompts only.
    std::optional<int64_t> max_num_partial_prefills;
    std::optional<int64_t> max_long_partial_prefills;
    bool enable_prefix_caching = true;
    SchedulingPolicy scheduling_policy = SchedulingPolicy::kFcfs;  // --scheduling-policy fcfs|priority
    int64_t block_size = 16;
    // KV memory (exec/kv_sizing.h has the rules). Device tier: num_device_blocks > 0, else kv_cache_gb > 0, else
    // gpu_memory_utilization of the GPU (CUDA; default 0.9) or 4 GiB (CPU). On the CPU an explicit --device cpu with
    // gpu_memory_utilization set is an error, and --device auto falling back to the CPU warns that it has no effect.
    double kv_cache_gb = 0;
    std::optional<double> gpu_memory_utilization;
    // Host tier (vLLM's --swap-space; --host-cache-gb is the same setting): nullopt: 4 GiB on CUDA, 0 on the CPU
    // (whose device tier is already host memory).
    std::optional<double> host_cache_gb;
    int64_t num_device_blocks = 0;  // > 0: the device tier's blocks, whatever the budgets (--num-gpu-blocks-override)
    int64_t num_host_blocks = -1;   // >= 0: overrides host_cache_gb (tests)
    // CUDA graphs of decode steps (vLLM's meaning): enforce_eager turns them off; cuda_graph_sizes are the batch
    // sizes captured at start (empty: 1, 2, 4, 8, 16, ... up to max_num_seqs). No effect on the CPU, which has none.
    bool enforce_eager = false;
    std::vector<int64_t> cuda_graph_sizes;
    // vLLM's --async-scheduling: the host's output work of a step (detokenizing, stop strings, streaming) runs while
    // the device computes the next step. A sample that a stop string ends is then found one step late: the row it
    // had in that step is computed and its token dropped (the outputs are the same). nullopt: on with CUDA, off on
    // the CPU (whose forward pass is the host's own work, so nothing would overlap), unless the environment's
    // TACO_ASYNC_SCHEDULING (0 or 1) says otherwise (the test suite runs the CPU engine both ways with it).
    std::optional<bool> async_scheduling;
    uint64_t seed = 0;  // seeds requests that carry no seed
    // vLLM's --kv-cache-dtype: nullopt is "auto" (the KV cache in the activation dtype, as it always is here); a dtype
    // given must be that one, else the engine refuses to start.
    std::optional<DType> kv_cache_dtype;
    // vLLM's --max-logprobs: the most (top) logprobs and prompt_logprobs a request may ask for, in
    // [0, SamplingParams::kMaxLogprobs] (the samplers return at most that many).
    int64_t max_logprobs = 20;

    Status validate() const;
    // The checks that need the device the engine runs on (the GPU-only flags on the CPU).
    Status validate_for(Device device) const;
    // async_scheduling resolved for the device (a bad TACO_ASYNC_SCHEDULING is an error naming it).
    Result<bool> async_scheduling_for(Device device) const;
};

}  // namespace taco
