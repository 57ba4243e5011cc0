#include "engine/engine.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/model_loading.h"
#include "exec/kv_sizing.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace taco {

namespace {

bool folder_has_tokenizer(const std::string& dir) {
    for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json"})
        if (file_exists(join_path(dir, name))) return true;
    return false;
}

// Runs one request's share of a step; what it throws becomes that request's error (nullopt: it did not fail).
std::optional<std::string> request_failure(const std::function<void()>& work) {
    try {
        work();
        return std::nullopt;
    } catch (const std::bad_alloc&) {
        return std::string("out of memory");
    } catch (const std::exception& e) {
        return std::string(e.what());
    } catch (...) {
        return std::string("unknown exception");
    }
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
    TACO_RETURN_IF_ERROR(config.validate());
    std::unique_ptr<Engine> engine(new Engine());
    engine->config_ = config;
    TACO_ASSIGN_OR_RETURN(const Device device, select_device(config.device));
    TACO_RETURN_IF_ERROR(config.validate_for(device));
    // The GPU rule of KV sizing counts this process's use of the GPU from here (exec/kv_sizing.h).
    int64_t device_free_before_load = -1;
#ifdef TACO_WITH_CUDA
    if (device == Device::kCuda) device_free_before_load = int64_t(cuda::device_memory().free_bytes);
#endif
    TACO_ASSIGN_OR_RETURN(
        std::unique_ptr<Decoder> decoder,
        load_decoder(config.model_dir, device, config.dtype, config.load_format, config.show_load_progress));
    const ModelConfig& model = decoder->config();
    if (!config.tokenizer_dir.empty()) {
        if (!folder_has_tokenizer(config.tokenizer_dir))
            return error("--tokenizer {}: the folder has no tokenizer (tokenizer.json, tokenizer.model or vocab.json)",
                         config.tokenizer_dir);
        auto tokenizer = Tokenizer::load(config.tokenizer_dir);
        if (!tokenizer) return tokenizer.status().with_context("--tokenizer " + config.tokenizer_dir);
        engine->tokenizer_ = std::move(*tokenizer);
    } else if (folder_has_tokenizer(config.model_dir)) {
        TACO_ASSIGN_OR_RETURN(engine->tokenizer_, Tokenizer::load(config.model_dir));
    }
    SchedulerConfig& sc = engine->scheduler_config_;
    sc.max_model_len = config.max_model_len > 0 ? config.max_model_len : model.derived_max_model_len();
    if (config.max_model_len > model.derived_max_model_len())
        log_warn("--max-model-len {} is above the model's {}; outputs past it may be meaningless", config.max_model_len,
                 model.derived_max_model_len());
    if (sc.max_model_len > decoder->max_positions()) {
        log_warn("max model length {} is past the model's {} learned positions; using {}", sc.max_model_len,
                 decoder->max_positions(), decoder->max_positions());
        sc.max_model_len = decoder->max_positions();
    }
    sc.max_num_batched_tokens = config.max_num_batched_tokens;
    sc.max_num_seqs = config.max_num_seqs;
    sc.enable_chunked_prefill = config.enable_chunked_prefill;
    sc.long_prefill_token_threshold = config.long_prefill_token_threshold;
    sc.max_num_partial_prefills = config.max_num_partial_prefills.value_or(0);
    sc.max_long_partial_prefills = config.max_long_partial_prefills.value_or(0);
    sc.policy = config.scheduling_policy;
    TACO_RETURN_IF_ERROR(sc.validate());
    sc = sc.resolved();
    if (sc.max_num_partial_prefills > 0 || sc.max_long_partial_prefills > 0)
        log_info("partial prefills at once: {} at most, {} of them of prompts longer than {} tokens",
                 sc.max_num_partial_prefills > 0 ? std::to_string(sc.max_num_partial_prefills) : "no bound",
                 sc.max_long_partial_prefills, sc.long_prefill_token_threshold);

    // The runner sizes both KV tiers (it picks the cache dtype and, on a GPU, measures what the rest takes).
    RunnerOptions ro;
    ro.block_size = config.block_size;
    ro.max_num_batched_tokens = sc.max_num_batched_tokens;
    ro.max_num_seqs = sc.max_num_seqs;
    ro.max_model_len = sc.max_model_len;
    ro.kv_cache_gb = config.kv_cache_gb;
    ro.host_cache_gb = config.host_cache_gb.value_or(device == Device::kCuda ? kDefaultSwapSpaceGb : 0.0);
    ro.num_device_blocks = config.num_device_blocks;
    ro.num_host_blocks = config.num_host_blocks;
    ro.gpu_memory_utilization = config.gpu_memory_utilization.value_or(kDefaultGpuMemoryUtilization);
    ro.device_free_bytes_before_load = device_free_before_load;
    ro.graph_mode = config.enforce_eager ? GraphMode::kEager : GraphMode::kGraphs;
    ro.cuda_graph_sizes =
        config.cuda_graph_sizes.empty() ? default_cuda_graph_sizes(sc.max_num_seqs) : config.cuda_graph_sizes;
    // The GPU sampler's scratch for a full step is taken before the runner measures what the KV cache may have.
    if (device == Device::kCuda) engine->sampler_.reserve_device(sc.max_num_seqs, model.vocab_size);
    TACO_ASSIGN_OR_RETURN(engine->runner_, ModelRunner::create(std::move(decoder), ro));
    const KvSizing& sizing = engine->runner_->kv_sizing();
    if (config.kv_cache_dtype && *config.kv_cache_dtype != engine->runner_->kv_dtype())
        return error(
            "--kv-cache-dtype {}: the KV cache is kept in the activation dtype, {} here (choose it with --dtype, or "
            "give --kv-cache-dtype auto)",
            dtype_name(*config.kv_cache_dtype), dtype_name(engine->runner_->kv_dtype()));

    TACO_ASSIGN_OR_RETURN(engine->async_scheduling_, config.async_scheduling_for(device));

    KvCacheConfig kc;
    kc.num_device_blocks = sizing.num_device_blocks;
    kc.num_host_blocks = sizing.num_host_blocks;
    kc.block_size = config.block_size;
    kc.enable_prefix_caching = config.enable_prefix_caching;
    TACO_RETURN_IF_ERROR(kc.validate());
    engine->kv_cache_ = std::make_unique<KvCacheManager>(kc);
    engine->scheduler_ = std::make_unique<Scheduler>(sc, *engine->kv_cache_);
    log_debug("engine on the {}: {} device blocks, {} host blocks of {} tokens", device_name(device),
              kc.num_device_blocks, kc.num_host_blocks, kc.block_size);
    engine->thread_ = std::thread([e = engine.get()] { e->step_loop(); });
    return engine;
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Requests still in flight end with an abort so no reader blocks forever.
    for (auto& [id, group] : groups_) group->stream()->push(group->error_output("the engine shut down"));
}

Result<std::shared_ptr<RequestGroup>> Engine::prepare(GenerationInput input) {
    const ModelConfig& model = runner_->config();
    std::vector<int32_t> ids = std::move(input.prompt_ids);
    if (input.prompt) {
        if (!tokenizer_) return error("the model folder has no tokenizer: send token ids instead of text");
        TACO_ASSIGN_OR_RETURN(ids, tokenizer_->encode(*input.prompt, /*add_special_tokens=*/true));
    }
    if (ids.empty()) return error("the prompt is empty");
    const int64_t max_len = scheduler_config_.max_model_len;
    if (const auto& keep = input.params.truncate_prompt_tokens) {
        // vLLM: -1 keeps the last max_model_len tokens; more than max_model_len is refused.
        if (*keep > max_len)
            return error("truncate_prompt_tokens value ({}) is greater than max_model_len ({}); choose a smaller one",
                         *keep, max_len);
        const int64_t num_kept = *keep == -1 ? max_len : *keep;
        if (num_kept > 0 && int64_t(ids.size()) > num_kept) ids.erase(ids.begin(), ids.end() - num_kept);
    }
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= model.vocab_size)
            return error("prompt token {} (at index {}) is outside the vocabulary [0, {})", ids[i], i,
                         model.vocab_size);
    const SamplingParams& p = input.params;
    TACO_RETURN_IF_ERROR(p.validate(model.vocab_size));
    // As vLLM: asking for more than --max-logprobs is an error naming the parameter.
    for (const auto& [name, value] : {std::pair<const char*, std::optional<int64_t>>{"logprobs", p.logprobs},
                                      {"prompt_logprobs", p.prompt_logprobs}})
        if (value && *value > config_.max_logprobs)
            return error("{}: {} log probabilities were asked for, more than --max-logprobs {}", name, *value,
                         config_.max_logprobs);
    if (!p.stop.empty() && !tokenizer_) return error("stop strings need a tokenizer, and the model folder has none");
    // Which field is at fault decides the error's first word, which the server turns into the OpenAI `param`:
    // a prompt that leaves no room for one completion token, else max_tokens.
    const int64_t prompt_len = int64_t(ids.size());
    if (prompt_len + (p.max_tokens > 0 ? 1 : 0) > max_len)
        return error(
            "the prompt is too long: this model's maximum context length is {} tokens, and the prompt has {} (plus "
            "at least {} for the completion)",
            max_len, prompt_len, p.max_tokens > 0 ? 1 : 0);
    if (p.max_tokens > max_len - prompt_len)
        return error(
            "max_tokens is too large: this model's maximum context length is {} tokens, but {} + {} were requested "
            "({} in the prompt, {} for the completion)",
            max_len, prompt_len, p.max_tokens, prompt_len, p.max_tokens);

    if (input.priority != 0 && config_.scheduling_policy != SchedulingPolicy::kPriority)
        return error("priority {} needs --scheduling-policy priority (this server schedules first come, first served)",
                     input.priority);
    std::vector<std::vector<int32_t>> bad_word_ids;
    if (!p.bad_words.empty()) {
        if (!tokenizer_) return error("bad_words need a tokenizer, and the model folder has none");
        TACO_ASSIGN_OR_RETURN(bad_word_ids, bad_words_token_ids(*tokenizer_, p.bad_words));
    }
    auto group = std::make_shared<RequestGroup>(next_id_++, std::move(ids), p, tokenizer_.get(),
                                                model.generation.eos_token_ids, config_.seed, model.vocab_size);
    group->set_bad_word_ids(std::move(bad_word_ids));
    group->set_priority(input.priority);
    return group;
}

Result<std::shared_ptr<OutputStream>> Engine::submit(GenerationInput input) {
    TACO_ASSIGN_OR_RETURN(auto group, prepare(std::move(input)));
    auto stream = group->stream();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        inbox_.push_back(std::move(group));
    }
    wake_.notify_all();
    return stream;
}

void Engine::abort(RequestId id) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        aborts_.push_back(id);
    }
    wake_.notify_all();
}

std::vector<Result<RequestOutput>> Engine::generate(std::vector<GenerationInput> inputs) {
    // All valid inputs enter the inbox in one critical section so the step thread admits them in the same step.
    std::vector<Result<std::shared_ptr<OutputStream>>> streams;
    std::vector<std::shared_ptr<RequestGroup>> groups;
    streams.reserve(inputs.size());
    for (auto& input : inputs) {
        auto group = prepare(std::move(input));
        if (!group) {
            streams.push_back(group.status());
            continue;
        }
        streams.push_back((*group)->stream());
        groups.push_back(std::move(*group));
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& group : groups) inbox_.push_back(std::move(group));
    }
    wake_.notify_all();
    std::vector<Result<RequestOutput>> outputs;
    for (auto& stream : streams) {
        if (!stream) {
            outputs.push_back(stream.status());
            continue;
        }
        RequestOutput out = (*stream)->wait_final();
        if (!out.error.empty())
            outputs.push_back(Status::error(out.error));
        else
            outputs.push_back(std::move(out));
    }
    return outputs;
}

EngineStats Engine::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void Engine::step_loop() {
    while (true) {
        bool stop = false;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] {
                return stopping_ || !inbox_.empty() || !aborts_.empty() || scheduler_->has_work() ||
                       !text_groups_.empty();
            });
            stop = stopping_;
            fault_hook_ = fault_hook_shared_;
        }
        if (stop) {
            // Outputs whose text is pending still reach their streams.
            request_failure([&] { run_text_stage(); });
            return;
        }
        // Nothing thrown here may leave this thread (the process would end). A failure in one request's work fails
        // that request (step() and drain_inbox() catch it); one outside any request's work (the forward pass, the
        // sampler, the scheduler) may have left every request of the step half updated, so every request in flight
        // fails, and the engine goes on with the next ones.
        std::optional<std::string> failure = request_failure([&] {
            drain_inbox();
            if (scheduler_->has_work())
                step();
            else
                run_text_stage();
        });
        if (!failure) continue;
        log_warn("engine step failed: {}; failing the {} requests in flight", *failure, groups_.size());
        text_groups_.clear();
        std::vector<std::shared_ptr<RequestGroup>> in_flight;
        for (auto& [id, group] : groups_) in_flight.push_back(group);
        for (auto& group : in_flight) fail_group(*group, "internal error: " + *failure);
    }
}

void Engine::set_fault_hook_for_testing(FaultHook hook) {
    std::lock_guard<std::mutex> lock(mutex_);
    fault_hook_shared_ = std::move(hook);
}

void Engine::fault_point(FaultPoint point, RequestId group_id) const {
    if (fault_hook_) fault_hook_(point, group_id);
}

void Engine::fail_group(RequestGroup& group, const std::string& message) {
    log_warn("request {} failed: {}", group.id(), message);
    // groups_ may hold the last reference to `group`.
    const std::shared_ptr<RequestGroup> keep = groups_.count(group.id()) ? groups_[group.id()] : nullptr;
    for (SampleState& s : group.samples())
        if (!s.finished) finish_sample(group, s, RequestStatus::kFinishedAborted);
    group.end_all();
    update_stats(/*count_step=*/false);
    group.stream()->push(group.error_output(message));
    groups_.erase(group.id());
}

void Engine::drain_inbox() {
    std::vector<std::shared_ptr<RequestGroup>> inbox;
    std::vector<RequestId> aborts;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        inbox.swap(inbox_);
        aborts.swap(aborts_);
    }
    for (auto& group : inbox) {
        Status added = Status::ok();
        if (std::optional<std::string> failure =
                request_failure([&] { added = scheduler_->add_request(group->make_request(next_arrival_++)); })) {
            added = Status::error("internal error: " + *failure);
        }
        if (!added) {
            group->stream()->push(group->error_output(added.message()));
            continue;
        }
        groups_[group->id()] = group;
        if (std::optional<std::string> failure = request_failure([&] {
                group->start();
                samples_[group->id()] = {group.get(), 0};
            })) {
            scheduler_->finish_request(group->id(), RequestStatus::kFinishedAborted);
            fail_group(*group, "internal error: " + *failure);
            continue;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.prompt_tokens_total += int64_t(group->prompt_ids().size());
    }
    // An aborted group's tokens so far keep their text: the abort's output comes after it.
    if (!aborts.empty()) run_text_stage();
    for (RequestId id : aborts) {
        auto it = groups_.find(id);
        if (it == groups_.end()) continue;
        RequestGroup& group = *it->second;
        for (SampleState& s : group.samples()) {
            if (s.finished) continue;
            finish_sample(group, s, RequestStatus::kFinishedAborted);
            group.output().finish(s.index, FinishReason::kAbort);
        }
        // Samples not forked yet will never exist: the group ends now.
        group.end_all();
        update_stats(/*count_step=*/false);
        emit(group);
    }
}

void Engine::step() {
    using StepClock = std::chrono::steady_clock;
    const StepClock::time_point step_start = StepClock::now();
    const auto since = [](StepClock::time_point from) {
        return std::chrono::duration<double>(StepClock::now() - from).count();
    };
    SchedulerOutput out = scheduler_->schedule();
    if (out.empty()) {
        run_text_stage();
        return;
    }
    std::vector<KvCopy> copies;
    for (const BlockCopy& c : out.copies)
        copies.push_back({c.src_tier == Tier::kHost, c.src, c.dst_tier == Tier::kHost, c.dst});
    runner_->copy_blocks(copies);

    // Per scheduled request, captured before update_after_step moves num_computed_tokens: where its new tokens
    // start and whether its last one samples.
    struct Rows {
        RequestId id;
        int64_t first_position;
        int64_t num_prompt_rows;
        bool samples;
    };
    std::vector<RunnerSequence> sequences;
    std::vector<Rows> rows;
    for (const ScheduledRequest& s : out.scheduled) {
        const Request& r = *s.request;
        RunnerSequence seq{r.token_ids, r.num_computed_tokens, s.num_new_tokens, kv_cache_->block_table(r.id),
                           s.samples()};
        seq.num_prompt_logits = num_prompt_logit_rows(r, s.num_new_tokens);
        seq.max_length = r.max_total_tokens;
        sequences.push_back(seq);
        rows.push_back({r.id, r.num_computed_tokens, seq.num_prompt_logits, s.samples()});
    }
    const auto now = std::chrono::steady_clock::now();
    for (const ScheduledRequest& s : out.scheduled)
        if (auto found = samples_.find(s.request->id); found != samples_.end())
            found->second.first->mark_scheduled(now);
    // Logits [rows, vocab] on the runner's device. Sampling reads them there (LogitsSampler: on the GPU for device
    // logits, so only tokens and the logprobs asked for come back); prompt logprobs read host rows, copied only in
    // a step that has some (on the CPU host_logits() is the logits themselves).
    fault_point(FaultPoint::kForward, 0);
    const double schedule_s = since(step_start);
    const StepClock::time_point forward_start = StepClock::now();
    const TensorView logits = runner_->execute(sequences);
    const double forward_s = since(forward_start);
    const StepClock::time_point output_start = StepClock::now();
    scheduler_->update_after_step(out);
    // Async scheduling: the previous step's text while the device computes this one (the CUDA runner's execute()
    // returns once the pass is launched; sampling below waits for it). A sample a stop string ends here had a row
    // in this step: the rows loop skips it, as it skips any request that ended or failed since it was scheduled.
    const double overlapped_text_s = async_scheduling_ ? run_text_stage() : 0;
    const bool any_prompt_rows =
        std::any_of(rows.begin(), rows.end(), [](const Rows& r) { return r.num_prompt_rows > 0; });
    const TensorView host_logits = any_prompt_rows ? runner_->host_logits() : TensorView();

    // A group whose own work throws (its prompt logprobs, fork, mask, token, output) joins step_failures_, is skipped
    // from there on and fails at the end of the step; the other rows go on.
    step_failures_.clear();
    auto guarded = [&](RequestGroup& group, const std::function<void()>& work) {
        if (step_failures_.count(&group)) return;
        if (std::optional<std::string> failure = request_failure(work)) step_failures_.emplace(&group, *failure);
    };
    const int64_t vocab = logits.size(1);
    std::vector<RequestGroup*> touched;  // groups with a sampling row this step, in row order
    std::vector<SampleRow> sample_rows_of_step;
    int64_t row = 0;
    for (const Rows& r : rows) {
        const int64_t first_prompt_row = row;
        row += r.num_prompt_rows;
        const int64_t sample_row = r.samples ? row++ : -1;
        auto found = samples_.find(r.id);
        if (found == samples_.end()) continue;  // ended since it was scheduled (async scheduling's text stage)
        RequestGroup& group = *found->second.first;
        const size_t index = found->second.second;
        guarded(group, [&] {
            for (int64_t i = 0; i < r.num_prompt_rows; ++i)
                group.output().add_prompt_logprobs(
                    r.first_position + i,
                    std::span<const float>(host_logits.row<float>(first_prompt_row + i), size_t(vocab)));
            if (!r.samples) return;
            if (std::find(touched.begin(), touched.end(), &group) == touched.end()) touched.push_back(&group);
            // Read now: a request that finishes in this step is gone from the scheduler by emit().
            if (const Request* parent = scheduler_->find(group.id()))
                group.set_num_cached_tokens(parent->num_cached_tokens);
            if (group.params().max_tokens == 0) {
                finish_after_prompt(group);
                return;
            }
            // The other samples of an n > 1 request start here, from the same prompt logits.
            if (group.num_samples() > 1 && !group.forked()) {
                fork_samples(group);
                for (size_t i = 1; i < group.samples().size(); ++i)
                    sample_rows_of_step.push_back({&group, &group.sample(i), sample_row});
            }
            sample_rows_of_step.push_back({&group, &group.sample(index), sample_row});
        });
    }
    TACO_CHECK_EQ(row, logits.size(0));
    std::erase_if(sample_rows_of_step, [&](const SampleRow& r) { return step_failures_.count(r.group) > 0; });
    const StepClock::time_point sample_start = StepClock::now();
    const std::vector<SampledToken> sampled = sample_rows(logits, sample_rows_of_step);
    const double sample_s = since(sample_start);
    const StepClock::time_point after_sample = StepClock::now();
    for (size_t i = 0; i < sampled.size(); ++i) {
        const SampleRow& r = sample_rows_of_step[i];
        guarded(*r.group, [&] { process_token(*r.group, *r.sample, sampled[i]); });
    }
    // Counters first, so a reader woken by its final output sees the step that produced it.
    update_stats(/*count_step=*/true, out.num_batched_tokens);
    for (RequestGroup* group : touched) {
        auto owned = groups_.find(group->id());
        if (step_failures_.count(group) || owned == groups_.end()) continue;
        if (std::find(text_groups_.begin(), text_groups_.end(), owned->second) == text_groups_.end())
            text_groups_.push_back(owned->second);
    }
    for (auto& [group, message] : step_failures_) fail_group(*group, "internal error: " + message);
    step_failures_.clear();
    const double text_s = async_scheduling_ ? 0 : run_text_stage();
    // The outputs' phase: what ran between the forward pass and sampling (prompt logprobs, forks) and after it, but
    // the text stage (EngineStats::step_text_s, its own phase).
    add_step_phases(schedule_s, forward_s, sample_s,
                    std::chrono::duration<double>(sample_start - output_start).count() + since(after_sample) -
                        overlapped_text_s - text_s);
}

void Engine::add_step_phases(double schedule_s, double forward_s, double sample_s, double output_s) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.step_schedule_s += schedule_s;
    stats_.step_forward_s += forward_s;
    stats_.step_sample_s += sample_s;
    stats_.step_output_s += output_s;
}

int64_t Engine::num_prompt_logit_rows(const Request& r, int64_t num_new_tokens) const {
    auto found = samples_.find(r.id);
    if (found == samples_.end()) return 0;
    RequestGroup& group = *found->second.first;
    if (!group.output().wants_prompt_logprobs() || group.output().prompt_logprobs_done()) return 0;
    // Positions [num_computed, num_computed + num_new) computed now; those below num_prompt_tokens - 1 predict
    // a prompt token (the last prompt position predicts the first output token: the sampling row).
    const int64_t end = std::min(r.num_computed_tokens + num_new_tokens, r.num_prompt_tokens - 1);
    return std::max<int64_t>(0, end - r.num_computed_tokens);
}

void Engine::finish_after_prompt(RequestGroup& group) {
    if (group.num_samples() > 1 && !group.forked()) fork_samples(group);
    for (SampleState& s : group.samples()) {
        if (s.finished) continue;
        finish_sample(group, s, RequestStatus::kFinishedLength);
        group.output().finish(s.index, FinishReason::kLength);
    }
}

void Engine::update_stats(bool count_step, int64_t num_batched_tokens) {
    KvCacheStats kv = kv_cache_->stats();
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_step) {
        stats_.num_steps++;
        size_t bucket = 0;
        while (bucket < kIterationTokenBounds.size() && num_batched_tokens > kIterationTokenBounds[bucket]) ++bucket;
        stats_.iteration_tokens_buckets[bucket]++;
        stats_.iteration_tokens_sum += num_batched_tokens;
    }
    stats_.num_running = scheduler_->num_running();
    stats_.num_waiting = scheduler_->num_waiting();
    stats_.num_preemptions = scheduler_->num_preemptions();
    stats_.kv_cache_usage = kv.usage();
    stats_.prefix_queries_tokens = kv.prefix_queries_tokens;
    stats_.prefix_hits_device_tokens = kv.prefix_hits_device_tokens;
    stats_.prefix_hits_host_tokens = kv.prefix_hits_host_tokens;
}

// ---- Sampling ---------------------------------------------------------------------------------------------------
// One sampler call (exec/logits_sampler.h: on the GPU when the logits are there) draws every row of the step; the
// draws of an n > 1 request's first step share its prompt row. A sample's draws are keyed by its seed and its output
// length so far (the draw index), so its tokens do not depend on what else is in the batch, on the order of the rows,
// or on a preemption (the recomputed sequence gives the same logits, and the draw index goes on from the tokens
// kept). The cumulative logprob that ranks best_of samples is the raw model logprob, as the reported logprobs are.
std::vector<SampledToken> Engine::sample_rows(const TensorView& logits, std::span<const SampleRow> rows) {
    std::vector<SamplingRow> draws;
    draws.reserve(rows.size());
    if (suppressed_scratch_.size() < rows.size()) suppressed_scratch_.resize(rows.size());
    for (const SampleRow& row : rows) {
        const RequestGroup& group = *row.group;
        const SamplingParams& p = group.params();
        const std::vector<int32_t>& output_ids = row.group->output().output_ids(row.sample->index);
        SamplingRow& draw = draws.emplace_back();
        draw.logits_row = row.row;
        draw.params = &p;
        draw.seed = row.sample->seed;
        draw.draw_index = int64_t(output_ids.size());
        draw.prompt_ids = group.prompt_ids();
        draw.output_ids = output_ids;
        // Suppressed ids: min_tokens' (stop ids and EOS), allowed_token_ids' complement, bad words' bans. One
        // list is used as it is; several are joined in this step's scratch.
        const bool min_tokens = int64_t(output_ids.size()) < p.min_tokens;
        if (!min_tokens && !group.has_bad_words()) {
            draw.suppressed_ids = group.disallowed_ids();
        } else if (min_tokens && !group.has_bad_words() && group.disallowed_ids().empty()) {
            draw.suppressed_ids = group.min_tokens_suppressed_ids();
        } else {
            std::vector<int32_t>& joined = suppressed_scratch_[draws.size() - 1];
            joined.clear();
            if (min_tokens)
                joined.insert(joined.end(), group.min_tokens_suppressed_ids().begin(),
                              group.min_tokens_suppressed_ids().end());
            joined.insert(joined.end(), group.disallowed_ids().begin(), group.disallowed_ids().end());
            group.bad_word_bans(output_ids, joined);
            draw.suppressed_ids = joined;
        }
        // Streamed samples need no logprob unless asked for (params.logprobs); best_of ranks by it.
        draw.sampled_logprob = !group.streams_deltas();
    }
    // Structured output: each constrained sample's bitmask of the tokens its grammar allows next, one row of
    // token_masks_ per such draw, computed in parallel (each matcher is its own sample's).
    std::vector<size_t> masked;
    for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].sample->matcher && !rows[i].sample->grammar_waiting) masked.push_back(i);
    TensorView sample_logits = logits;
    if (!masked.empty()) {
        const size_t words = size_t(rows[masked[0]].sample->matcher->grammar().vocab().num_mask_words());
        token_masks_.assign(masked.size() * words, 0u);
        // On pool threads, where nothing may throw: a mask that fails fails its group (its row is drawn unmasked
        // and dropped).
        std::vector<std::optional<std::string>> failures(masked.size());
        ThreadPool::global().parallel_for(int64_t(masked.size()), 1, [&](int64_t begin, int64_t end) {
            for (int64_t m = begin; m < end; ++m) {
                const SampleRow& row = rows[masked[size_t(m)]];
                const std::span<uint32_t> mask(token_masks_.data() + size_t(m) * words, words);
                failures[size_t(m)] = request_failure([&] {
                    fault_point(FaultPoint::kMask, row.group->id());
                    row.sample->matcher->fill_next_token_bitmask(mask);
                });
            }
        });
        for (size_t m = 0; m < masked.size(); ++m) {
            if (failures[m])
                step_failures_.emplace(rows[masked[m]].group, *failures[m]);
            else
                draws[masked[m]].allowed_tokens = std::span<const uint32_t>(token_masks_.data() + m * words, words);
        }
        // The device sampler applies the masks where switched on (LogitsSampler::device_grammar_masks); otherwise a
        // step with one samples on the host, which draws the same tokens from the same logits.
        if (logits.device != Device::kCpu && !LogitsSampler::device_grammar_masks())
            sample_logits = runner_->host_logits();
    }
    std::vector<SampledToken> tokens(rows.size());
    sampler_.sample(runner_->executor().context(), sample_logits, draws, tokens);
    return tokens;
}
// ---- End of sampling --------------------------------------------------------------------------------------------

Result<std::shared_ptr<const structured::CompiledGrammar>> Engine::compile_structured(
    const structured::StructuredOutputSpec& spec) const {
    std::shared_ptr<const structured::TokenVocab> vocab;
    {
        std::lock_guard<std::mutex> lock(structured_mutex_);
        if (!token_vocab_) {
            if (!tokenizer_) return error("structured output needs the model's tokenizer, and this model has none");
            token_vocab_ = structured::TokenVocab::from_tokenizer(*tokenizer_, runner_->config().vocab_size);
        }
        vocab = token_vocab_;
    }
    return grammar_cache_.get(spec, vocab);
}

void Engine::fork_samples(RequestGroup& group) {
    const Request& parent = *scheduler_->find(group.id());
    std::vector<std::unique_ptr<Request>> children = group.fork(parent, [this] { return next_id_++; });
    for (size_t i = 0; i < children.size(); ++i) {
        samples_[children[i]->id] = {&group, i + 1};
        scheduler_->add_forked(group.id(), std::move(children[i]));
    }
}

void Engine::process_token(RequestGroup& group, SampleState& sample, const SampledToken& sampled) {
    fault_point(FaultPoint::kToken, group.id());
    Request& r = *scheduler_->find(sample.request_id);
    r.token_ids.push_back(sampled.token);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.generation_tokens_total++;
    }
    // The sampler also gives the sampled token's logprob for best_of's ranking; it is shown only when asked for.
    const SampleLogprobs* shown = group.params().logprobs && sampled.logprobs ? &*sampled.logprobs : nullptr;
    const double logprob = sampled.logprobs ? sampled.logprobs->sampled.logprob : 0;
    // Structured output: the matcher follows the token; a complete grammar ends the sample with "stop". A token the
    // grammar refuses comes only from a step whose mask allowed nothing (no token of the vocabulary spells what the
    // grammar needs): the sample is aborted rather than continued off the grammar.
    bool grammar_complete = false, grammar_refused = false;
    if (sample.matcher && sample.grammar_waiting) {
        // The grammar starts with the token after the one that completes grammar_after.
        const std::string& after = group.params().grammar_after;
        const structured::TokenVocab& vocab = sample.matcher->grammar().vocab();
        // A special token (no bytes in the vocabulary: DeepSeek's or Qwen's </think> may be one) counts as its text.
        if (vocab.matchable(sampled.token)) {
            sample.grammar_tail += vocab.bytes(sampled.token);
        } else if (tokenizer_) {
            sample.grammar_tail += tokenizer_->id_to_token(sampled.token).value_or("");
        }
        if (sample.grammar_tail.find(after) != std::string::npos) {
            sample.grammar_waiting = false;
            sample.grammar_tail.clear();
        } else if (sample.grammar_tail.size() > after.size()) {
            sample.grammar_tail.erase(0, sample.grammar_tail.size() - after.size());
        }
    } else if (sample.matcher) {
        grammar_refused = !sample.matcher->accept_token(sampled.token);
        grammar_complete = !grammar_refused && sample.matcher->is_terminated();
    }
    // The token stage: what the token alone decides; its text and stop strings follow in run_text_stage().
    std::optional<FinishReason> reason = group.output().push_token(
        sample.index, sampled.token, shown ? std::optional<SampleLogprobs>(*shown) : std::nullopt, logprob,
        r.num_tokens() >= scheduler_config_.max_model_len, grammar_complete);
    if (!reason && grammar_refused) {
        // (Unless the token's text completes a stop string: finish() says whether it recorded the abort.)
        if (group.output().finish(sample.index, FinishReason::kAbort))
            log_warn("request {}: token {} is outside its grammar (no token could continue it); aborted",
                     sample.request_id, sampled.token);
        reason = FinishReason::kAbort;
    }
    if (!reason) return;
    switch (*reason) {
        case FinishReason::kLength: finish_sample(group, sample, RequestStatus::kFinishedLength); return;
        case FinishReason::kStop: finish_sample(group, sample, RequestStatus::kFinishedStopped); return;
        case FinishReason::kAbort: finish_sample(group, sample, RequestStatus::kFinishedAborted); return;
    }
}

void Engine::finish_sample(RequestGroup& group, SampleState& sample, RequestStatus status) {
    group.mark_finished(sample);
    scheduler_->finish_request(sample.request_id, status);
    samples_.erase(sample.request_id);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.num_requests_finished++;
}

CacheInfo Engine::cache_info() const {
    const KvSizing& sizing = runner_->kv_sizing();
    CacheInfo info;
    info.block_size = config_.block_size;
    info.num_device_blocks = sizing.num_device_blocks;
    info.num_host_blocks = sizing.num_host_blocks;
    info.cache_dtype = std::string(dtype_name(runner_->kv_dtype()));
    info.enable_prefix_caching = config_.enable_prefix_caching;
    info.gpu_memory_utilization = config_.gpu_memory_utilization.value_or(0.9);
    return info;
}

double Engine::run_text_stage() {
    if (text_groups_.empty()) return 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<RequestGroup>> groups;
    groups.swap(text_groups_);
    // Groups failed or aborted since their tokens were sampled have had their last output.
    std::erase_if(groups, [&](const std::shared_ptr<RequestGroup>& group) {
        auto found = groups_.find(group->id());
        return found == groups_.end() || found->second != group;
    });
    std::vector<std::pair<RequestGroup*, std::string>> failures;
    bool finished_late = false;
    for (const std::shared_ptr<RequestGroup>& group : groups) {
        std::optional<std::string> failure = request_failure([&] {
            for (int64_t index : group->output().flush_text()) {
                SampleState& s = group->sample(size_t(index));
                if (s.finished) continue;
                finish_sample(*group, s, RequestStatus::kFinishedStopped);
                finished_late = true;
            }
        });
        if (failure) failures.emplace_back(group.get(), *failure);
    }
    // Counters first, as in step(): a reader woken by a final output sees its request finished.
    if (finished_late) update_stats(/*count_step=*/false);
    for (const std::shared_ptr<RequestGroup>& group : groups) {
        if (std::any_of(failures.begin(), failures.end(), [&](const auto& f) { return f.first == group.get(); }))
            continue;
        if (std::optional<std::string> failure = request_failure([&] { emit(*group); }))
            failures.emplace_back(group.get(), *failure);
    }
    for (auto& [group, message] : failures) fail_group(*group, "internal error: " + message);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.step_text_s += seconds;
    return seconds;
}

void Engine::emit(RequestGroup& group) {
    if (const Request* parent = scheduler_->find(group.id())) group.set_num_cached_tokens(parent->num_cached_tokens);
    if (std::optional<RequestOutput> out = group.take_output()) group.stream()->push(std::move(*out));
    if (group.done()) groups_.erase(group.id());
}

}  // namespace taco
