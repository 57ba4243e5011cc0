#include "engine/offline_bench.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "io/safetensors.h"

namespace taco {
namespace {

using Clock = std::chrono::steady_clock;

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Input tables read one row per token (token and learned-position embeddings) across the families we load.
bool is_input_embedding(const std::string& name) {
    for (const char* suffix : {"embed_tokens.weight", "wte.weight", "wpe.weight", "word_embeddings.weight",
                               "embed_in.weight", "embed_positions.weight", "tok_embeddings.weight"})
        if (ends_with(name, suffix)) return true;
    return false;
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const size_t at = std::min(values.size() - 1, size_t(p * double(values.size() - 1) + 0.5));
    return values[at];
}

struct RequestTrace {
    std::shared_ptr<OutputStream> stream;
    double first_token_s = -1;
    std::vector<std::pair<double, int64_t>> arrivals;  // (time, tokens in the delta)
};

}  // namespace

double BenchRun::decode_tokens_per_s() const {
    const double span = elapsed_s - prefill_done_s;
    return span > 0 ? double(decode_tokens) / span : 0;
}

Result<ModelFootprint> model_footprint(const std::string& model_dir, bool tied_embeddings) {
    TACO_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open_dir(model_dir));
    ModelFootprint out;
    for (const std::string& name : checkpoint.tensor_names()) {
        TACO_ASSIGN_OR_RETURN(TensorView t, checkpoint.tensor(name));
        if (t.ndim != 2) continue;
        // A tied table is read whole by the output head; an untied one a row per token.
        if (is_input_embedding(name) &&
            !(tied_embeddings && !ends_with(name, "wpe.weight") && !ends_with(name, "embed_positions.weight")))
            continue;
        out.matrix_params += t.numel();
        out.weight_bytes_per_step += int64_t(t.nbytes());
    }
    return out;
}

Result<BenchRun> run_bench_workload(Engine& engine, const BenchWorkload& workload) {
    if (workload.num_requests < 1)
        return error("the number of requests must be positive, got {}", workload.num_requests);
    if (workload.input_len < 1) return error("--input-len must be positive, got {}", workload.input_len);
    if (workload.output_len < 1) return error("--output-len must be positive, got {}", workload.output_len);
    const int64_t vocab = engine.model_config().vocab_size;
    std::mt19937_64 rng(workload.seed);
    std::vector<GenerationInput> inputs(size_t(workload.num_requests));
    for (auto& input : inputs) {
        input.prompt_ids.resize(size_t(workload.input_len));
        for (auto& id : input.prompt_ids) id = int32_t(rng() % uint64_t(vocab));
        input.params.temperature = 0;
        input.params.ignore_eos = true;
        input.params.max_tokens = workload.output_len;
        input.params.min_tokens = workload.output_len;
    }

    const EngineStats before = engine.stats();
    const int64_t steps_before = before.num_steps;
    std::vector<RequestTrace> traces(inputs.size());
    const Clock::time_point start = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    for (size_t i = 0; i < inputs.size(); ++i) {
        TACO_ASSIGN_OR_RETURN(traces[i].stream, engine.submit(std::move(inputs[i])));
    }
    // Streams are polled every 200 us rather than each read by a blocking thread (a thousand requests would need
    // a thousand threads): a delta's stamp is at most one poll late, far below a step's time.
    BenchRun run;
    run.num_requests = workload.num_requests;
    int64_t steps_at_prefill_done = -1;
    std::vector<bool> done(traces.size(), false);
    size_t remaining = traces.size();
    while (remaining > 0) {
        for (size_t i = 0; i < traces.size(); ++i) {
            if (done[i]) continue;
            while (auto out = traces[i].stream->try_next()) {
                if (!out->error.empty()) return error("request {} failed: {}", i, out->error);
                int64_t tokens = 0;
                for (const auto& sample : out->samples) tokens += int64_t(sample.token_ids.size());
                const double now = seconds();
                if (tokens > 0 && traces[i].first_token_s < 0) traces[i].first_token_s = now;
                if (tokens > 0) traces[i].arrivals.emplace_back(now, tokens);
                if (out->finished) {
                    done[i] = true;
                    --remaining;
                    break;
                }
            }
        }
        if (steps_at_prefill_done < 0 &&
            std::all_of(traces.begin(), traces.end(), [](const RequestTrace& t) { return t.first_token_s >= 0; }))
            steps_at_prefill_done = engine.stats().num_steps;
        if (remaining > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    run.elapsed_s = seconds();
    const EngineStats after = engine.stats();
    run.engine_steps = after.num_steps - steps_before;
    if (run.engine_steps > 0) {
        const double per_step_ms = 1e3 / double(run.engine_steps);
        run.step_schedule_ms = (after.step_schedule_s - before.step_schedule_s) * per_step_ms;
        run.step_forward_ms = (after.step_forward_s - before.step_forward_s) * per_step_ms;
        run.step_sample_ms = (after.step_sample_s - before.step_sample_s) * per_step_ms;
        run.step_output_ms = (after.step_output_s - before.step_output_s) * per_step_ms;
        run.step_text_ms = (after.step_text_s - before.step_text_s) * per_step_ms;
    }

    std::vector<double> ttfts;
    for (const auto& t : traces) {
        ttfts.push_back(t.first_token_s);
        run.prefill_done_s = std::max(run.prefill_done_s, t.first_token_s);
    }
    for (const auto& t : traces)
        for (const auto& [when, tokens] : t.arrivals) {
            run.output_tokens += tokens;
            if (when > run.prefill_done_s) run.decode_tokens += tokens;
        }
    run.prompt_tokens = workload.num_requests * workload.input_len;
    double sum = 0;
    for (double v : ttfts) sum += v;
    run.mean_ttft_s = sum / double(ttfts.size());
    run.p50_ttft_s = percentile(ttfts, 0.5);
    run.p99_ttft_s = percentile(ttfts, 0.99);
    run.decode_steps = steps_at_prefill_done < 0 ? 0 : engine.stats().num_steps - steps_at_prefill_done;
    return run;
}

}  // namespace taco
