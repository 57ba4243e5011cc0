// Structured output against Llama 3's 128,256-token vocabulary (.cache/tokenizers/llama3, from
// scripts/setup_test_data.sh): building the token bytes, compiling a typical tool-call schema (the start states'
// token classes included), and the mask of each step while a valid call is decoded token by token, from a cold
// grammar (states classified as they are first reached) and a warm one (every state seen before).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <benchmark/benchmark.h>

#include "structured/grammar_matcher.h"
#include "structured/structured_output.h"
#include "tokenizer/tokenizer.h"

namespace taco::structured {
namespace {

const char* kToolSchema = R"({"type": "object", "properties": {
  "name": {"const": "get_weather"},
  "arguments": {"type": "object", "properties": {
    "location": {"type": "string", "description": "City and country"},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "include": {"type": "array", "items": {"enum": ["wind", "rain", "uv"]}, "maxItems": 3},
    "when": {"type": "string", "format": "date"}},
    "required": ["location", "unit"], "additionalProperties": false}},
  "required": ["name", "arguments"], "additionalProperties": false})";

const char* kToolCall =
    R"({"name": "get_weather", "arguments": {"location": "Paris, France", "unit": "celsius", "days": 3, )"
    R"("include": ["wind", "rain"], "when": "2025-06-01"}})";

// tool_choice "required" with the hermes parser (server/tool_request.h): the call above and a second tool, in
// Qwen's <tool_call> tags, as many calls as the model writes.
const char* kSecondTool = R"({"type": "object", "properties": {
  "name": {"const": "get_time"},
  "arguments": {"type": "object", "properties": {"tz": {"type": "string", "maxLength": 32}},
    "required": ["tz"], "additionalProperties": false}},
  "required": ["name", "arguments"], "additionalProperties": false})";

struct Fixture {
    std::unique_ptr<Tokenizer> tokenizer;
    std::shared_ptr<const TokenVocab> vocab;
    std::vector<int32_t> call_ids;
    std::vector<int32_t> hermes_ids;  // <tool_call>\n{call}\n</tool_call>
};

Fixture* fixture() {
    static Fixture* f = [] {
        auto* out = new Fixture;
        auto tokenizer = Tokenizer::load(std::string(TACO_SOURCE_DIR) + "/.cache/tokenizers/llama3");
        if (!tokenizer) return out;
        out->tokenizer = std::move(*tokenizer);
        out->vocab = TokenVocab::from_tokenizer(*out->tokenizer, out->tokenizer->vocab_size());
        out->call_ids = *out->tokenizer->encode(kToolCall, false);
        out->hermes_ids = *out->tokenizer->encode(std::string("<tool_call>\n") + kToolCall + "\n</tool_call>", false);
        return out;
    }();
    return f;
}

StructuredOutputSpec tool_spec() {
    StructuredOutputSpec spec;
    spec.kind = StructuredKind::kJsonSchema;
    spec.text = kToolSchema;
    return spec;
}

StructuredOutputSpec hermes_spec() {
    StructuredOutputSpec spec;
    spec.kind = StructuredKind::kJsonSchema;
    spec.text = std::string(R"({"anyOf": [)") + kToolSchema + ", " + kSecondTool + "]}";
    spec.sequence = JsonSequenceFormat{"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}};
    return spec;
}

// tool_choice "auto" with strict tools: free text without <tool_call>, then optional calls.
StructuredOutputSpec hermes_auto_spec() {
    StructuredOutputSpec spec = hermes_spec();
    spec.sequence->free_text_without = "<tool_call>";
    return spec;
}

void BM_TokenVocab(benchmark::State& state) {
    Fixture* f = fixture();
    if (!f->tokenizer) return state.SkipWithError("no .cache/tokenizers/llama3 (scripts/setup_test_data.sh)");
    for (auto _ : state)
        benchmark::DoNotOptimize(TokenVocab::from_tokenizer(*f->tokenizer, f->tokenizer->vocab_size()));
}

void BM_CompileToolSchema(benchmark::State& state) {
    Fixture* f = fixture();
    if (!f->tokenizer) return state.SkipWithError("no .cache/tokenizers/llama3 (scripts/setup_test_data.sh)");
    for (auto _ : state) {
        GrammarCache cache;  // a fresh cache: every iteration compiles
        benchmark::DoNotOptimize(cache.get(tool_spec(), f->vocab));
    }
}

void BM_CompileHermesTools(benchmark::State& state) {
    Fixture* f = fixture();
    if (!f->tokenizer) return state.SkipWithError("no .cache/tokenizers/llama3 (scripts/setup_test_data.sh)");
    for (auto _ : state) {
        GrammarCache cache;
        benchmark::DoNotOptimize(cache.get(hermes_spec(), f->vocab));
    }
}

// Median mask time per step of decoding kToolCall (hermes: in its tags, with a second tool); counters: median_us,
// max_us, steps.
void masks_along_call(benchmark::State& state, bool warm, bool hermes = false, bool free_text = false) {
    Fixture* f = fixture();
    if (!f->tokenizer) return state.SkipWithError("no .cache/tokenizers/llama3 (scripts/setup_test_data.sh)");
    std::vector<double> times_us;
    std::vector<uint32_t> words(size_t(f->vocab->num_mask_words()));
    std::shared_ptr<const CompiledGrammar> shared;
    for (auto _ : state) {
        std::shared_ptr<const CompiledGrammar> grammar = shared;
        if (!grammar) {
            GrammarCache cache;
            grammar = *cache.get(free_text ? hermes_auto_spec() : hermes ? hermes_spec() : tool_spec(), f->vocab);
            if (warm) shared = grammar;
        }
        GrammarMatcher m(grammar, {});
        for (int32_t id : hermes ? f->hermes_ids : f->call_ids) {
            const auto t0 = std::chrono::steady_clock::now();
            m.fill_next_token_bitmask(words);
            const auto t1 = std::chrono::steady_clock::now();
            times_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            if (std::getenv("TACO_BENCH_TRACE"))
                std::fprintf(stderr, "%8.1f us  before '%s'\n", times_us.back(), f->vocab->bytes(id).c_str());
            if (!m.accept_token(id)) return state.SkipWithError("the tool call does not follow its schema");
        }
    }
    std::sort(times_us.begin(), times_us.end());
    state.counters["median_us"] = times_us[times_us.size() / 2];
    state.counters["p90_us"] = times_us[times_us.size() * 9 / 10];
    state.counters["max_us"] = times_us.back();
    state.counters["steps"] = double((hermes ? f->hermes_ids : f->call_ids).size());
    if (shared) state.counters["mask_kib"] = double(shared->mask_bytes()) / 1024;
}

void BM_MaskPerTokenCold(benchmark::State& state) { masks_along_call(state, false); }
void BM_MaskPerTokenWarm(benchmark::State& state) { masks_along_call(state, true); }
void BM_MaskHermesCallWarm(benchmark::State& state) { masks_along_call(state, true, true); }
void BM_MaskHermesAutoStrictCold(benchmark::State& state) { masks_along_call(state, false, true, true); }
void BM_MaskHermesAutoStrictWarm(benchmark::State& state) { masks_along_call(state, true, true, true); }

BENCHMARK(BM_TokenVocab)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompileToolSchema)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaskPerTokenCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaskPerTokenWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompileHermesTools)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaskHermesCallWarm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaskHermesAutoStrictCold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MaskHermesAutoStrictWarm)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace taco::structured

BENCHMARK_MAIN();
