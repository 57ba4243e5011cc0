// Engine benchmarks on the CPU backend (issue C, items 8 and 9):
//  - BM_Decode/batch/model: decode tokens/s of `batch` requests running together (target: batch 8 >= 3x batch 1).
//  - BM_SharedSystemPrompt/prefix_caching: time to first token of requests that share a long system prompt,
//    with the prefix cache on and off, and the hit rate.
//  - BM_ConstrainedStep/constrained: step time of 64 demo-model requests decoding together, unconstrained and each
//    under a json_schema grammar (issue 14 item 5: the step-time overhead of structured output at 64 requests).
#include <algorithm>
#include <chrono>

#include <benchmark/benchmark.h>

#include "engine/engine.h"

namespace taco {
namespace {

std::string model_dir(const char* name) { return std::string(TACO_SOURCE_DIR) + "/" + name; }

std::unique_ptr<Engine> engine_for(const char* model, bool prefix_caching) {
    EngineConfig config;
    config.model_dir = model_dir(model);
    config.enable_prefix_caching = prefix_caching;
    config.max_model_len = 1024;
    auto engine = Engine::create(config);
    if (!engine) std::abort();
    return std::move(engine).value();
}

void BM_Decode(benchmark::State& state) {
    const int64_t batch = state.range(0);
    auto engine = engine_for(state.range(1) ? "models/demo" : "tests/data/models/llama", true);
    int64_t tokens = 0;
    for (auto _ : state) {
        std::vector<GenerationInput> inputs;
        for (int64_t i = 0; i < batch; ++i) {
            GenerationInput input;
            input.prompt_ids = {int32_t(1 + i), 2, 3, 4};
            input.params.temperature = 0;
            input.params.max_tokens = 100;
            input.params.ignore_eos = true;
            inputs.push_back(std::move(input));
        }
        for (auto& out : engine->generate(std::move(inputs))) tokens += int64_t(out->samples[0].token_ids.size());
    }
    state.counters["tokens_per_s"] = benchmark::Counter(double(tokens), benchmark::Counter::kIsRate);
}
// Second argument: 0 = the golden llama (300 KB, compute-bound even at batch 1), 1 = the demo model (15 MB).
BENCHMARK(BM_Decode)->ArgsProduct({{1, 8}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SharedSystemPrompt(benchmark::State& state) {
    const bool prefix_caching = state.range(0) != 0;
    auto engine = engine_for("models/demo", prefix_caching);
    std::string system(2000, ' ');
    for (size_t i = 0; i < system.size(); ++i)
        system[i] = "In the beginning God created the heaven and the earth. "[i % 56];
    double ttft_total = 0;
    int64_t requests = 0;
    for (auto _ : state) {
        GenerationInput input;
        input.prompt = system + " Question " + std::to_string(requests) + ":";
        input.params.temperature = 0;
        input.params.max_tokens = 1;
        auto start = std::chrono::steady_clock::now();
        auto stream = engine->submit(std::move(input));
        (*stream)->next();
        ttft_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        (*stream)->wait_final();
        ++requests;
    }
    EngineStats s = engine->stats();
    state.counters["ttft_ms"] = 1000.0 * ttft_total / double(requests);
    state.counters["hit_rate"] =
        s.prefix_queries_tokens
            ? double(s.prefix_hits_device_tokens + s.prefix_hits_host_tokens) / double(s.prefix_queries_tokens)
            : 0.0;
}
BENCHMARK(BM_SharedSystemPrompt)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(20);

// Each request writes an array of at least 40 order lines (objects of enums, bounded integers, strings with patterns,
// dates): every step's 64 masks walk a real schema, and no sample can end before max_tokens.
constexpr const char* kOrderLinesSchema = R"({"type": "array", "minItems": 40, "items": {"type": "object",
    "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3,6}$"}, "qty": {"type": "integer",
    "minimum": 1, "maximum": 99}, "status": {"enum": ["pending", "paid", "shipped"]}, "ship_by": {"type": "string",
    "format": "date"}, "note": {"type": "string", "maxLength": 12}}, "required": ["sku", "qty", "status", "ship_by"],
    "additionalProperties": false}})";

void BM_ConstrainedStep(benchmark::State& state) {
    constexpr int64_t kBatch = 64, kSteps = 64;
    const bool constrained = state.range(0) != 0;
    auto engine = engine_for("models/demo", false);
    std::shared_ptr<const structured::CompiledGrammar> grammar;
    if (constrained) {
        structured::StructuredOutputSpec spec;
        spec.kind = structured::StructuredKind::kJsonSchema;
        spec.text = kOrderLinesSchema;
        auto compiled = engine->compile_structured(spec);
        if (!compiled) std::abort();
        grammar = *compiled;
    }
    int64_t steps = 0, tokens = 0;
    double seconds = 0;
    for (auto _ : state) {
        std::vector<GenerationInput> inputs;
        for (int64_t i = 0; i < kBatch; ++i) {
            GenerationInput input;
            input.prompt_ids = {int32_t(1 + i), 2, 3, 4};
            input.params.temperature = 1;
            input.params.seed = i;
            input.params.max_tokens = kSteps;
            input.params.ignore_eos = true;
            input.params.grammar = grammar;
            inputs.push_back(std::move(input));
        }
        const auto start = std::chrono::steady_clock::now();
        int64_t longest = 0;
        for (auto& out : engine->generate(std::move(inputs))) {
            tokens += int64_t(out->samples[0].token_ids.size());
            longest = std::max(longest, int64_t(out->samples[0].token_ids.size()));
        }
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        steps += longest;  // the prefill step of all 64 prompts makes each request's first token
    }
    state.counters["step_ms"] = 1000.0 * seconds / double(steps);
    state.counters["tokens_per_s"] = double(tokens) / seconds;
}
// Argument: 0 = unconstrained, 1 = every request under kOrderLinesSchema.
BENCHMARK(BM_ConstrainedStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace taco

BENCHMARK_MAIN();
