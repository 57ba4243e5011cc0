// Engine: Engine::submit(input) -> OutputStream, thread-safe; a step thread runs schedule -> copies ->
// forward -> sample -> detokenize/stop -> stream, continuously batching whatever is in flight. The offline
// `generate` submits many inputs together and waits for all of them. This file holds the step loop, submit/abort
// and the inbox; the n / best_of fan-out is RequestGroup (request_group.h), the text side and the outputs are
// OutputProcessor (output_processor.h), the KV block counts come from size_kv_cache (exec/kv_sizing.h).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "engine/engine_config.h"
#include "engine/output_stream.h"
#include "engine/request_group.h"
#include "exec/batch_sampler.h"
#include "exec/logits_sampler.h"
#include "exec/model_runner.h"
#include "exec/sampling_params.h"
#include "sched/scheduler.h"
#include "structured/structured_output.h"
#include "tokenizer/tokenizer.h"

namespace taco {

struct GenerationInput {
    std::optional<std::string> prompt;  // tokenized with the model's tokenizer (special tokens added)
    std::vector<int32_t> prompt_ids;    // used when prompt is absent
    SamplingParams params;
    // vLLM's request priority: lower runs first under --scheduling-policy priority; anything but 0 is an error
    // under fcfs (as vLLM).
    int64_t priority = 0;
};

// Bucket bounds of vllm:iteration_tokens_total (tokens computed per engine step), as vLLM's.
inline constexpr std::array<int64_t, 13> kIterationTokenBounds = {1,   8,    16,   32,   64,   128,  256,
                                                                  512, 1024, 2048, 4096, 8192, 16384};

// Counters the server exports under vLLM's metric names (server/metrics.cc: vllm:num_requests_running, ...).
struct EngineStats {
    int64_t num_running = 0;
    int64_t num_waiting = 0;
    double kv_cache_usage = 0;
    int64_t prefix_queries_tokens = 0;
    int64_t prefix_hits_device_tokens = 0;
    int64_t prefix_hits_host_tokens = 0;
    int64_t prompt_tokens_total = 0;
    int64_t generation_tokens_total = 0;
    int64_t num_preemptions = 0;
    int64_t num_steps = 0;
    int64_t num_requests_finished = 0;
    // Steps by tokens computed: [i] counts steps of at most kIterationTokenBounds[i] tokens (and above the one
    // before), the last counts the rest; not cumulative.
    std::array<int64_t, kIterationTokenBounds.size() + 1> iteration_tokens_buckets{};
    int64_t iteration_tokens_sum = 0;
    // The step thread's wall time by phase, summed over the steps (seconds): scheduling (with the KV block copies'
    // launch); the forward pass (building the batch and launching it on the GPU; the whole forward on the CPU);
    // sampling (its draws' packing and upload, the sampling kernels and the wait for the GPU: on the GPU the device
    // time shows here); the outputs' token stage (prompt logprobs, tokens, forks, the finish checks of tokens); and
    // the text stage (detokenising, stop strings, streaming). On the GPU scheduling and the token stage are host work
    // the device waits for; the text stage is too, unless async scheduling runs it while the device computes the next
    // step (issue 13 item 2: "the GPU never waits for host work").
    double step_schedule_s = 0;
    double step_forward_s = 0;
    double step_sample_s = 0;
    double step_output_s = 0;
    double step_text_s = 0;
};

// The KV cache's configuration, for vllm:cache_config_info.
struct CacheInfo {
    int64_t block_size = 0;
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = 0;
    std::string cache_dtype;
    bool enable_prefix_caching = false;
    double gpu_memory_utilization = 0;
};

class Engine {
public:
    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Validates the input (errors name the parameter) and queues it. The stream yields deltas, then the final.
    Result<std::shared_ptr<OutputStream>> submit(GenerationInput input);
    // Aborts a request at any moment; its stream ends with finish reason "abort"-less final output and its KV
    // blocks are freed. Unknown or finished ids are ignored.
    void abort(RequestId id);
    // Submits all inputs together and returns their final outputs in input order (an error per failed input).
    std::vector<Result<RequestOutput>> generate(std::vector<GenerationInput> inputs);

    EngineStats stats() const;
    CacheInfo cache_info() const;
    const ModelConfig& model_config() const { return runner_->config(); }
    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    int64_t max_model_len() const { return scheduler_config_.max_model_len; }
    int64_t max_logprobs() const { return config_.max_logprobs; }  // --max-logprobs
    SchedulingPolicy scheduling_policy() const { return config_.scheduling_policy; }
    bool async_scheduling() const { return async_scheduling_; }  // EngineConfig::async_scheduling, resolved

    // Structured output: the grammar of `spec` compiled against this model's vocabulary (cached by spec), for
    // SamplingParams::grammar. Errors say what is wrong with the schema, regex or grammar. Thread-safe.
    Result<std::shared_ptr<const structured::CompiledGrammar>> compile_structured(
        const structured::StructuredOutputSpec& spec) const;

    // Where the step thread calls a fault hook: in one request's work (its grammar mask, its sampled token) or
    // before the forward pass of a step, which no single request owns (the group id is 0 there).
    enum class FaultPoint { kMask, kToken, kForward };
    using FaultHook = std::function<void(FaultPoint point, RequestId group_id)>;
    // Tests: the hook runs at each fault point and may throw, as a failing allocation or a broken invariant would.
    void set_fault_hook_for_testing(FaultHook hook);

private:
    // One row of a step's logits that a sample draws its next token from.
    struct SampleRow {
        RequestGroup* group;
        SampleState* sample;
        int64_t row;  // in the step's logits [rows, vocab]
    };

    Engine() = default;
    // Validates and tokenizes an input into a group that is not yet visible to the step thread.
    Result<std::shared_ptr<RequestGroup>> prepare(GenerationInput input);
    void step_loop();
    void step();
    void drain_inbox();
    // Sampling: one token for each of `rows` from this step's logits [rows, vocab], in one sampler call (on the
    // GPU when the logits are there: LogitsSampler). Nothing else in the step samples.
    std::vector<SampledToken> sample_rows(const TensorView& logits, std::span<const SampleRow> rows);
    void process_token(RequestGroup& group, SampleState& sample, const SampledToken& sampled);
    void fork_samples(RequestGroup& group);
    void finish_sample(RequestGroup& group, SampleState& sample, RequestStatus status);
    // How many of this step's new tokens of `r` need their logits for prompt logprobs (a prefix of them).
    int64_t num_prompt_logit_rows(const Request& r, int64_t num_new_tokens) const;
    // max_tokens 0: every sample ends with finish reason "length" once the prompt is computed, no token sampled.
    void finish_after_prompt(RequestGroup& group);
    // The text stage of the tokens of text_groups_ (OutputProcessor::flush_text): their text and stop strings, a
    // sample a stop string ended finishes, then each group's stream gets its output. Run at the end of a step, or with
    // async scheduling after the next step's forward pass is launched (and before anything else touches the groups:
    // an abort, an idle engine).
    // Returns the seconds it took (also added to EngineStats::step_text_s).
    double run_text_stage();
    // Pushes what the group's stream gets now; forgets the group once it is done.
    void emit(RequestGroup& group);
    // A failure of the group's own work: its samples end, their KV is freed, its stream gets `message` as an error
    // (HTTP 500) and the group is forgotten. Other requests go on.
    void fail_group(RequestGroup& group, const std::string& message);
    void fault_point(FaultPoint point, RequestId group_id) const;
    // count_step: a step ran, computing num_batched_tokens tokens.
    void update_stats(bool count_step, int64_t num_batched_tokens = 0);
    // Adds one step's phase times (EngineStats::step_*_s).
    void add_step_phases(double schedule_s, double forward_s, double sample_s, double output_s);

    EngineConfig config_;
    SchedulerConfig scheduler_config_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<ModelRunner> runner_;
    std::unique_ptr<KvCacheManager> kv_cache_;
    std::unique_ptr<Scheduler> scheduler_;

    // Owned by the step thread.
    std::unordered_map<RequestId, std::shared_ptr<RequestGroup>> groups_;      // by group id (= stream id)
    std::unordered_map<RequestId, std::pair<RequestGroup*, size_t>> samples_;  // request id -> (group, sample)
    LogitsSampler sampler_;  // BatchSampler or DeviceBatchSampler, by where the logits are
    std::vector<std::vector<int32_t>> suppressed_scratch_;  // [draws of a step] joined suppressed ids of sample_rows
    std::vector<uint32_t> token_masks_;  // [masked draws of a step, vocab/32] the grammar bitmasks of sample_rows
    bool async_scheduling_ = false;      // EngineConfig::async_scheduling, resolved for the device
    // Groups with sampled tokens whose text stage has not run (run_text_stage), in the order they sampled.
    std::vector<std::shared_ptr<RequestGroup>> text_groups_;
    // The groups whose own work threw in the current step, with the message: failed once the step is done.
    std::unordered_map<RequestGroup*, std::string> step_failures_;
    FaultHook fault_hook_;  // the step's copy of fault_hook_shared_

    // Structured output: the vocabulary's token bytes (built at the first request that needs them) and the
    // compiled grammars.
    mutable std::mutex structured_mutex_;  // guards token_vocab_
    mutable std::shared_ptr<const structured::TokenVocab> token_vocab_;
    mutable structured::GrammarCache grammar_cache_;

    mutable std::mutex mutex_;  // guards everything below
    std::condition_variable wake_;
    std::vector<std::shared_ptr<RequestGroup>> inbox_;
    std::vector<RequestId> aborts_;
    bool stopping_ = false;
    EngineStats stats_;
    FaultHook fault_hook_shared_;
    std::atomic<RequestId> next_id_{1};
    uint64_t next_arrival_ = 0;
    std::thread thread_;
};

}  // namespace taco
