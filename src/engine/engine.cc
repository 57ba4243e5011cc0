#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/file_util.h"
#include "core/log.h"
#include "engine/stop_checker.h"
#include "exec/kv_sizing.h"
#include "exec/sampler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace taco {

// One of the n (or best_of) samples of a request: its own sampler (RNG), detokenizer and stop-string state.
struct Engine::SampleState {
    RequestId request_id = 0;
    int64_t index = 0;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<IncrementalDetokenizer> detokenizer;
    std::unique_ptr<StopChecker> stop_checker;
    std::vector<int32_t> output_ids;
    double cumulative_logprob = 0;
    bool finished = false;
    SampleOutput whole;  // everything emitted so far (final outputs of best_of > n)
};

// A user request: its prompt, parameters, stream and samples. Sample 0 runs from the start; samples 1.. are
// forked from it (sharing its KV, copy-on-write) when the prompt has been computed.
struct Engine::RequestGroup {
    RequestId id = 0;
    std::vector<int32_t> prompt_ids;
    SamplingParams params;
    int64_t num_samples = 1;  // best_of, else n
    std::shared_ptr<OutputStream> stream;
    std::vector<SampleState> samples;  // reserved to num_samples: never reallocates
    bool forked = false;
    int64_t num_finished = 0;
    int64_t num_cached_tokens = 0;
    std::vector<SampleLogprobs> prompt_logprobs;  // of prompt tokens 1.., filled as the prompt is computed
    bool prompt_logprobs_sent = false;
    bool streams_deltas() const { return num_samples == params.n; }
    bool wants_prompt_logprobs() const { return params.prompt_logprobs.has_value(); }
    bool prompt_logprobs_done() const { return prompt_logprobs.size() + 1 >= prompt_ids.size(); }
};

namespace {

bool folder_has_tokenizer(const std::string& dir) {
    for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json"})
        if (file_exists(join_path(dir, name))) return true;
    return false;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
    uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
    TACO_RETURN_IF_ERROR(config.validate());
    std::unique_ptr<Engine> engine(new Engine());
    engine->config_ = config;
    TACO_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, Decoder::load(config.model_dir));
    const ModelConfig& model = decoder->config();
    if (folder_has_tokenizer(config.model_dir)) {
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
    TACO_RETURN_IF_ERROR(sc.validate());

    // The CPU backend's cache is f32 (KvCacheTensors).
    KvSizingConfig sizing_config = KvSizingConfig::for_model(model, config.block_size, DType::kF32);
    sizing_config.kv_cache_gb = config.kv_cache_gb;
    sizing_config.host_cache_gb = config.host_cache_gb;
    sizing_config.num_device_blocks = config.num_device_blocks;
    sizing_config.num_host_blocks = config.num_host_blocks;
    sizing_config.max_model_len = sc.max_model_len;
    sizing_config.max_num_seqs = sc.max_num_seqs;
    TACO_ASSIGN_OR_RETURN(const KvSizing sizing, size_kv_cache(sizing_config));

    KvCacheConfig kc;
    kc.num_device_blocks = sizing.num_device_blocks;
    kc.num_host_blocks = sizing.num_host_blocks;
    kc.block_size = config.block_size;
    kc.enable_prefix_caching = config.enable_prefix_caching;
    TACO_RETURN_IF_ERROR(kc.validate());
    engine->kv_cache_ = std::make_unique<KvCacheManager>(kc);
    engine->scheduler_ = std::make_unique<Scheduler>(sc, *engine->kv_cache_);
    engine->runner_ =
        std::make_unique<ModelRunner>(std::move(decoder), kc.num_device_blocks, kc.num_host_blocks, kc.block_size);
    log_debug("engine: {} device blocks, {} host blocks of {} tokens", kc.num_device_blocks, kc.num_host_blocks,
              kc.block_size);
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
    for (auto& [id, group] : groups_) {
        RequestOutput out;
        out.id = id;
        out.prompt_ids = group->prompt_ids;
        out.finished = true;
        out.error = "the engine shut down";
        group->stream->push(std::move(out));
    }
}

Result<std::shared_ptr<Engine::RequestGroup>> Engine::prepare(GenerationInput input) {
    const ModelConfig& model = runner_->config();
    std::vector<int32_t> ids = std::move(input.prompt_ids);
    if (input.prompt) {
        if (!tokenizer_) return error("the model folder has no tokenizer: send token ids instead of text");
        TACO_ASSIGN_OR_RETURN(ids, tokenizer_->encode(*input.prompt, /*add_special_tokens=*/true));
    }
    if (ids.empty()) return error("the prompt is empty");
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= model.vocab_size)
            return error("prompt token {} (at index {}) is outside the vocabulary [0, {})", ids[i], i,
                         model.vocab_size);
    const SamplingParams& p = input.params;
    TACO_RETURN_IF_ERROR(p.validate(model.vocab_size));
    if (!p.stop.empty() && !tokenizer_) return error("stop strings need a tokenizer, and the model folder has none");
    const int64_t total = int64_t(ids.size()) + p.max_tokens;
    if (total > scheduler_config_.max_model_len)
        return error(
            "this model's maximum context length is {} tokens, but {} were requested ({} in the prompt, {} "
            "for the completion)",
            scheduler_config_.max_model_len, total, ids.size(), p.max_tokens);

    auto group = std::make_shared<RequestGroup>();
    group->id = next_id_++;
    group->prompt_ids = std::move(ids);
    group->params = p;
    group->num_samples = p.best_of.value_or(p.n);
    group->stream = std::make_shared<OutputStream>(group->id);
    return group;
}

Result<std::shared_ptr<OutputStream>> Engine::submit(GenerationInput input) {
    TACO_ASSIGN_OR_RETURN(auto group, prepare(std::move(input)));
    auto stream = group->stream;
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
        streams.push_back((*group)->stream);
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
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock,
                       [this] { return stopping_ || !inbox_.empty() || !aborts_.empty() || scheduler_->has_work(); });
            if (stopping_) return;
        }
        drain_inbox();
        if (scheduler_->has_work()) step();
    }
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
        auto request = std::make_unique<Request>();
        request->id = group->id;
        request->arrival_order = next_arrival_++;
        request->token_ids = group->prompt_ids;
        request->num_prompt_tokens = int64_t(group->prompt_ids.size());
        request->max_total_tokens = request->num_prompt_tokens + group->params.max_tokens;
        // Cached prompt blocks would leave positions without logits (vLLM skips prefix-cache hits likewise).
        request->skip_prefix_cache = group->wants_prompt_logprobs();
        Status added = scheduler_->add_request(std::move(request));
        if (!added) {
            RequestOutput out;
            out.id = group->id;
            out.finished = true;
            out.error = added.message();
            group->stream->push(std::move(out));
            continue;
        }
        group->samples.reserve(size_t(group->num_samples));
        group->samples.emplace_back();
        SampleState& s = group->samples.back();
        s.request_id = group->id;
        s.index = 0;
        const uint64_t fallback = mix_seed(config_.seed, group->id);
        SamplingParams params = group->params;
        s.sampler = std::make_unique<Sampler>(params, fallback);
        if (tokenizer_)
            s.detokenizer =
                std::make_unique<IncrementalDetokenizer>(*tokenizer_, group->prompt_ids, params.skip_special_tokens);
        s.stop_checker = std::make_unique<StopChecker>(params.stop, params.include_stop_str_in_output);
        samples_[group->id] = {group.get(), 0};
        groups_[group->id] = group;
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.prompt_tokens_total += int64_t(group->prompt_ids.size());
    }
    for (RequestId id : aborts) {
        auto it = groups_.find(id);
        if (it == groups_.end()) continue;
        RequestGroup& group = *it->second;
        RequestOutput delta;
        for (SampleState& s : group.samples) {
            if (s.finished) continue;
            finish_sample(group, s, FinishReason::kAbort, RequestStatus::kFinishedAborted);
            SampleOutput out;
            out.index = s.index;
            out.cumulative_logprob = s.cumulative_logprob;
            out.finish_reason = FinishReason::kAbort;
            delta.samples.push_back(std::move(out));
        }
        // Samples not forked yet will never exist: the group ends now.
        group.num_finished = group.num_samples;
        update_stats(/*count_step=*/false);
        emit(group, std::move(delta));
    }
}

void Engine::step() {
    SchedulerOutput out = scheduler_->schedule();
    if (out.empty()) return;
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
    Tensor logits = runner_->execute(sequences);
    scheduler_->update_after_step(out);

    const int64_t vocab = logits.size(1);
    auto logits_row = [&](int64_t row) {
        return std::span<const float>(logits.as<float>() + row * vocab, size_t(vocab));
    };
    std::unordered_map<RequestGroup*, RequestOutput> deltas;
    int64_t row = 0;
    for (const Rows& r : rows) {
        auto found = samples_.find(r.id);
        TACO_CHECK(found != samples_.end());
        RequestGroup& group = *found->second.first;
        const size_t index = found->second.second;
        for (int64_t i = 0; i < r.num_prompt_rows; ++i, ++row) {
            // Position p's logits give the logprob of prompt token p + 1; rows recomputed after a preemption
            // were recorded already.
            const int64_t position = r.first_position + i;
            if (position != int64_t(group.prompt_logprobs.size())) continue;
            group.prompt_logprobs.push_back(Sampler::logprobs_of(
                logits_row(row), group.prompt_ids[size_t(position + 1)], *group.params.prompt_logprobs));
        }
        if (!r.samples) continue;
        std::span<const float> raw = logits_row(row++);
        auto& delta = deltas[&group];
        // Read now: a request that finishes in this step is gone from the scheduler by emit().
        if (const Request* parent = scheduler_->find(group.id)) group.num_cached_tokens = parent->num_cached_tokens;
        if (group.params.max_tokens == 0) {
            finish_after_prompt(group, delta);
            continue;
        }
        // The other samples of an n > 1 request start here, from the same prompt logits.
        if (group.num_samples > 1 && !group.forked) {
            fork_samples(group);
            for (size_t i = 1; i < group.samples.size(); ++i) sample_token(group, group.samples[i], raw, delta);
        }
        sample_token(group, group.samples[index], raw, delta);
    }
    TACO_CHECK_EQ(row, logits.size(0));
    // Counters first, so a reader woken by its final output sees the step that produced it.
    update_stats(/*count_step=*/true);
    for (auto& [group, delta] : deltas) emit(*group, std::move(delta));
}

int64_t Engine::num_prompt_logit_rows(const Request& r, int64_t num_new_tokens) const {
    auto found = samples_.find(r.id);
    if (found == samples_.end()) return 0;
    const RequestGroup& group = *found->second.first;
    if (!group.wants_prompt_logprobs() || group.prompt_logprobs_done()) return 0;
    // Positions [num_computed, num_computed + num_new) computed now; those below num_prompt_tokens - 1 predict
    // a prompt token (the last prompt position predicts the first output token: the sampling row).
    const int64_t end = std::min(r.num_computed_tokens + num_new_tokens, r.num_prompt_tokens - 1);
    return std::max<int64_t>(0, end - r.num_computed_tokens);
}

void Engine::finish_after_prompt(RequestGroup& group, RequestOutput& delta) {
    if (group.num_samples > 1 && !group.forked) fork_samples(group);
    for (SampleState& s : group.samples) {
        if (s.finished) continue;
        finish_sample(group, s, FinishReason::kLength, RequestStatus::kFinishedLength);
        SampleOutput out;
        out.index = s.index;
        out.finish_reason = FinishReason::kLength;
        delta.samples.push_back(std::move(out));
    }
}

void Engine::update_stats(bool count_step) {
    KvCacheStats kv = kv_cache_->stats();
    std::lock_guard<std::mutex> lock(mutex_);
    if (count_step) stats_.num_steps++;
    stats_.num_running = scheduler_->num_running();
    stats_.num_waiting = scheduler_->num_waiting();
    stats_.num_preemptions = scheduler_->num_preemptions();
    stats_.kv_cache_usage = kv.usage();
    stats_.prefix_queries_tokens = kv.prefix_queries_tokens;
    stats_.prefix_hits_device_tokens = kv.prefix_hits_device_tokens;
    stats_.prefix_hits_host_tokens = kv.prefix_hits_host_tokens;
}

void Engine::sample_token(RequestGroup& group, SampleState& sample, std::span<const float> raw, RequestOutput& delta) {
    const SamplingParams& p = group.params;
    std::vector<float> work(raw.begin(), raw.end());  // the sampler edits its logits in place
    const Request& r = *scheduler_->find(sample.request_id);
    std::vector<int32_t> suppressed;
    if (sample.output_ids.size() < size_t(p.min_tokens)) {
        suppressed = p.stop_token_ids;
        if (!p.ignore_eos) {
            const auto& eos = runner_->config().generation.eos_token_ids;
            suppressed.insert(suppressed.end(), eos.begin(), eos.end());
        }
    }
    SamplingContext context{std::span<const int32_t>(r.token_ids.data(), size_t(r.num_prompt_tokens)),
                            sample.output_ids, suppressed};
    SampleLogprobs logprobs;
    const bool want_logprobs = p.logprobs.has_value();
    const int32_t token = sample.sampler->sample(work, context, want_logprobs ? &logprobs : nullptr);
    // The cumulative logprob ranks best_of samples; it is the raw model logprob, as the reported logprobs.
    double token_logprob = 0;
    if (want_logprobs)
        token_logprob = logprobs.sampled.logprob;
    else if (!group.streams_deltas())
        token_logprob = Sampler::logprobs_of(raw, token, 0).sampled.logprob;
    process_token(group, sample, token, want_logprobs ? &logprobs : nullptr, token_logprob, delta);
}

void Engine::fork_samples(RequestGroup& group) {
    group.forked = true;
    const Request& parent = *scheduler_->find(group.id);
    for (int64_t i = 1; i < group.num_samples; ++i) {
        auto child = std::make_unique<Request>(parent);
        child->id = next_id_++;
        group.samples.emplace_back();
        SampleState& s = group.samples.back();
        s.request_id = child->id;
        s.index = i;
        SamplingParams params = group.params;
        if (params.seed) params.seed = *params.seed + uint64_t(i);  // each sample its own stream, reproducibly
        s.sampler = std::make_unique<Sampler>(params, mix_seed(mix_seed(config_.seed, group.id), uint64_t(i)));
        if (tokenizer_)
            s.detokenizer =
                std::make_unique<IncrementalDetokenizer>(*tokenizer_, group.prompt_ids, params.skip_special_tokens);
        s.stop_checker = std::make_unique<StopChecker>(params.stop, params.include_stop_str_in_output);
        samples_[s.request_id] = {&group, size_t(i)};
        scheduler_->add_forked(group.id, std::move(child));
    }
}

void Engine::process_token(RequestGroup& group, SampleState& sample, int32_t token, const SampleLogprobs* logprobs,
                           double token_logprob, RequestOutput& delta) {
    Request& r = *scheduler_->find(sample.request_id);
    r.token_ids.push_back(token);
    sample.output_ids.push_back(token);
    sample.cumulative_logprob += token_logprob;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.generation_tokens_total++;
    }
    SampleOutput out;
    out.index = sample.index;
    out.token_ids = {token};
    if (logprobs) out.logprobs.push_back(*logprobs);

    std::optional<FinishReason> reason;
    std::string stop_reason;
    const SamplingParams& p = group.params;
    const auto& eos = runner_->config().generation.eos_token_ids;
    const bool is_stop_token =
        std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end();
    const bool is_eos = !p.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end();
    std::string piece = sample.detokenizer ? sample.detokenizer->push(token) : std::string();
    // As vLLM: stop strings count only once more than min_tokens tokens exist.
    const bool can_stop = int64_t(sample.output_ids.size()) > p.min_tokens;
    StopChecker::Step step = sample.stop_checker->push(piece, can_stop);
    out.text = std::move(step.text);
    if (step.stopped) {
        reason = FinishReason::kStop;
        stop_reason = sample.stop_checker->stop_strings()[size_t(step.stop_index)];
    } else if (is_stop_token || is_eos) {
        reason = FinishReason::kStop;
        if (is_stop_token && !is_eos) stop_reason = std::to_string(token);
    } else if (int64_t(sample.output_ids.size()) >= p.max_tokens || r.num_tokens() >= scheduler_config_.max_model_len) {
        reason = FinishReason::kLength;
    }
    if (reason && !step.stopped) {
        // Release what the detokenizer and the stop checker held back.
        std::string tail = sample.detokenizer ? sample.detokenizer->flush() : std::string();
        StopChecker::Step last = sample.stop_checker->push(tail, can_stop);
        out.text += last.text;
        if (!last.stopped) out.text += sample.stop_checker->flush();
    }
    out.cumulative_logprob = sample.cumulative_logprob;
    if (reason) {
        out.finish_reason = reason;
        out.stop_reason = stop_reason;
        finish_sample(
            group, sample, *reason,
            *reason == FinishReason::kLength ? RequestStatus::kFinishedLength : RequestStatus::kFinishedStopped);
    }
    delta.samples.push_back(std::move(out));
}

void Engine::finish_sample(RequestGroup& group, SampleState& sample, FinishReason reason, RequestStatus status) {
    sample.finished = true;
    scheduler_->finish_request(sample.request_id, status);
    samples_.erase(sample.request_id);
    group.num_finished++;
    (void)reason;
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.num_requests_finished++;
}

void Engine::emit(RequestGroup& group, RequestOutput delta) {
    delta.id = group.id;
    delta.prompt_ids = group.prompt_ids;
    const Request* parent = scheduler_->find(group.id);
    if (parent) group.num_cached_tokens = parent->num_cached_tokens;
    delta.num_cached_tokens = group.num_cached_tokens;
    // Sent once, with the first output after the whole prompt has been computed.
    const bool attach_prompt_logprobs = group.wants_prompt_logprobs() && !group.prompt_logprobs_sent &&
                                        group.prompt_logprobs_done() && !delta.samples.empty();
    for (SampleOutput& s : delta.samples) {
        SampleOutput& whole = group.samples[size_t(s.index)].whole;
        whole.index = s.index;
        whole.token_ids.insert(whole.token_ids.end(), s.token_ids.begin(), s.token_ids.end());
        whole.text += s.text;
        whole.logprobs.insert(whole.logprobs.end(), s.logprobs.begin(), s.logprobs.end());
        whole.cumulative_logprob = s.cumulative_logprob;
        if (s.finish_reason) {
            whole.finish_reason = s.finish_reason;
            whole.stop_reason = s.stop_reason;
        }
    }
    const bool done = group.num_finished >= group.num_samples;
    if (group.streams_deltas()) {
        delta.finished = done;
        if (attach_prompt_logprobs) {
            delta.prompt_logprobs = group.prompt_logprobs;
            group.prompt_logprobs_sent = true;
        }
        if (!delta.samples.empty() || done) group.stream->push(std::move(delta));
    } else if (done) {
        // best_of > n: the n samples with the highest cumulative logprob, as one final output.
        std::vector<SampleOutput> all;
        for (SampleState& s : group.samples) all.push_back(s.whole);
        std::stable_sort(all.begin(), all.end(),
                         [](const auto& a, const auto& b) { return a.cumulative_logprob > b.cumulative_logprob; });
        all.resize(size_t(std::min<int64_t>(group.params.n, int64_t(all.size()))));
        for (size_t i = 0; i < all.size(); ++i) all[i].index = int64_t(i);
        RequestOutput final_out;
        final_out.id = group.id;
        final_out.prompt_ids = group.prompt_ids;
        final_out.num_cached_tokens = group.num_cached_tokens;
        final_out.samples = std::move(all);
        final_out.finished = true;
        if (group.wants_prompt_logprobs() && group.prompt_logprobs_done())
            final_out.prompt_logprobs = group.prompt_logprobs;
        group.stream->push(std::move(final_out));
    }
    if (done) groups_.erase(group.id);
}

}  // namespace taco
