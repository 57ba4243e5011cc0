// Structured output on the GPU: the demo model's sampled outputs follow their grammar when the CUDA engine samples
// them, in both dtypes and under CUDA graphs, in one batch with unconstrained requests (whose rows carry no mask).
// With TACO_CUDA_DEVICE_GRAMMAR_MASKS on (the default) the GPU sampler applies the masks; with it at 0 masked rows are
// sampled from host logits; scripts/gpu_quick.sh runs this suite both ways. Skipped where no GPU is usable.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "cuda_test_util.h"
#include "engine/engine.h"

namespace taco {
namespace {

using structured::StructuredKind;
using structured::StructuredOutputSpec;
using testing_util::EngineSetup;

class CudaEngineStructured : public ::testing::TestWithParam<DType> {
protected:
    void SetUp() override { TACO_SKIP_WITHOUT_GPU(); }
};

GenerationInput constrained(Engine& engine, StructuredKind kind, std::string text, std::vector<std::string> choices,
                            int64_t n, double temperature, uint64_t seed) {
    StructuredOutputSpec spec;
    spec.kind = kind;
    spec.text = std::move(text);
    spec.choices = std::move(choices);
    auto grammar = engine.compile_structured(spec);
    EXPECT_TRUE(grammar.is_ok()) << grammar.status().message();
    GenerationInput input;
    input.prompt = "The weather today is";
    input.params.n = n;
    input.params.temperature = temperature;
    input.params.seed = seed;
    input.params.max_tokens = 160;
    if (grammar.is_ok()) input.params.grammar = *grammar;
    return input;
}

TEST_P(CudaEngineStructured, SampledOutputsFollowTheirGrammarBesideUnconstrainedRows) {
    EngineSetup setup{Device::kCuda, GetParam()};
    auto engine = testing_util::make_engine_on(std::string(TACO_SOURCE_DIR) + "/models/demo", setup);
    ASSERT_NE(engine, nullptr);
    const std::string schema = R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
        "temp": {"type": "integer", "minimum": -30, "maximum": 45}, "sunny": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["wind", "rain", "sun"]}, "maxItems": 3}},
        "required": ["city", "temp", "sunny"], "additionalProperties": false})";
    const std::string pattern = "[A-Z][a-z]{2,6} (19|20)[0-9]{2}";
    std::vector<GenerationInput> inputs;
    inputs.push_back(constrained(*engine, StructuredKind::kJsonSchema, schema, {}, 4, 1.0, 5));
    inputs.push_back(constrained(*engine, StructuredKind::kRegex, pattern, {}, 3, 1.0, 6));
    inputs.push_back(constrained(*engine, StructuredKind::kChoice, "", {"sunny", "rainy", "cloudy"}, 3, 1.0, 7));
    inputs.push_back(constrained(*engine, StructuredKind::kJsonSchema, schema, {}, 1, 0.0, 0));  // greedy
    GenerationInput free;
    free.prompt = "Once upon a time";
    free.params.n = 2;
    free.params.temperature = 1.0;
    free.params.seed = 8;
    free.params.max_tokens = 24;
    free.params.ignore_eos = true;
    inputs.push_back(free);
    auto outputs = engine->generate(inputs);
    ASSERT_EQ(outputs.size(), inputs.size());
    for (const auto& out : outputs) ASSERT_TRUE(out.is_ok()) << out.status().message();

    for (size_t i : {size_t(0), size_t(3)}) {
        for (const SampleOutput& s : outputs[i]->samples) {
            ASSERT_EQ(s.finish_reason, FinishReason::kStop) << s.text;
            nlohmann::json value;
            ASSERT_NO_THROW(value = nlohmann::json::parse(s.text)) << s.text;
            ASSERT_TRUE(value.is_object()) << s.text;
            EXPECT_TRUE(value.at("city").is_string()) << s.text;
            EXPECT_TRUE(value.at("temp").is_number_integer()) << s.text;
            EXPECT_GE(value.at("temp").get<int64_t>(), -30) << s.text;
            EXPECT_LE(value.at("temp").get<int64_t>(), 45) << s.text;
            EXPECT_TRUE(value.at("sunny").is_boolean()) << s.text;
            if (value.contains("tags")) {
                EXPECT_LE(value.at("tags").size(), 3u) << s.text;
            }
            for (const auto& [key, v] : value.items())
                EXPECT_TRUE(key == "city" || key == "temp" || key == "sunny" || key == "tags") << s.text;
        }
    }
    for (const SampleOutput& s : outputs[1]->samples) {
        EXPECT_EQ(s.finish_reason, FinishReason::kStop) << s.text;
        EXPECT_TRUE(std::regex_match(s.text, std::regex(pattern))) << s.text;
    }
    for (const SampleOutput& s : outputs[2]->samples) {
        EXPECT_EQ(s.finish_reason, FinishReason::kStop) << s.text;
        EXPECT_TRUE(s.text == "sunny" || s.text == "rainy" || s.text == "cloudy") << s.text;
    }
    // The unconstrained rows of the same steps took no mask: their full length, whatever the grammar rows allowed.
    for (const SampleOutput& s : outputs[4]->samples) EXPECT_EQ(s.token_ids.size(), 24u);
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaEngineStructured, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return info.param == DType::kF32 ? "float32" : "bfloat16"; });

}  // namespace
}  // namespace taco
