// The parity rule of ARCHITECTURE.md against fp32 transformers on every golden model: last-position logits
// within 1e-3, identical greedy tokens (every golden step has a top-1/top-2 margin >= 1e-2), and the rotary
// frequencies transformers computed.
#include <cmath>

#include <gtest/gtest.h>

#include "batch_runner.h"
#include "engine/engine.h"
#include "golden_models.h"
#include "model/rotary_tables.h"

namespace taco {
namespace {

using testing_util::GoldenModel;

class GoldenParity : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        golden_ = testing_util::load_golden_model(GetParam());
        auto decoder = Decoder::load(golden_.dir);
        ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
        decoder_ = std::move(decoder).value();
    }
    GoldenModel golden_;
    std::unique_ptr<Decoder> decoder_;
};

TEST_P(GoldenParity, LastPromptLogitsMatchTransformersWithin1e3) {
    for (const auto& c : golden_.cases) {
        auto logits = testing_util::run_chunked(*decoder_, c.prompt_ids, 1 << 20, 16);
        const auto& last = logits.back();
        ASSERT_EQ(last.size(), c.last_logits.size());
        float max_diff = 0;
        for (size_t i = 0; i < last.size(); ++i) max_diff = std::max(max_diff, std::abs(last[i] - c.last_logits[i]));
        EXPECT_LE(max_diff, 1e-3f) << "prompt of " << c.prompt_ids.size() << " tokens";
    }
}

TEST_P(GoldenParity, GreedyContinuationEqualsTransformers) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = golden_.dir;
    config.max_model_len = 256;  // the static rope kinds' goldens go past the original context length
    auto engine = Engine::create(config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    std::vector<GenerationInput> inputs;
    for (const auto& c : golden_.cases) {
        GenerationInput input;
        input.prompt_ids = c.prompt_ids;
        input.params.temperature = 0;
        input.params.max_tokens = int64_t(c.greedy_ids.size());
        input.params.min_tokens = input.params.max_tokens;
        inputs.push_back(std::move(input));
    }
    auto outputs = (*engine)->generate(std::move(inputs));
    for (size_t i = 0; i < golden_.cases.size(); ++i) {
        ASSERT_TRUE(outputs[i].is_ok()) << outputs[i].status().message();
        EXPECT_EQ(outputs[i]->samples.at(0).token_ids, golden_.cases[i].greedy_ids)
            << "prompt of " << golden_.cases[i].prompt_ids.size() << " tokens";
    }
}

TEST_P(GoldenParity, RotaryFrequenciesEqualTransformers) {
    if (decoder_->spec().attention.positions != PositionEncoding::kRotary) GTEST_SKIP() << "no rotary embedding";
    RotaryFrequencies freq = compute_rotary_frequencies(decoder_->config());
    auto expected = golden_.golden["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(freq.inv_freq.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_NEAR(freq.inv_freq[i], expected[i], 2e-7 * std::abs(expected[i]) + 1e-12) << "inv_freq[" << i << "]";
    EXPECT_NEAR(freq.attention_scaling, golden_.golden["attention_scaling"].get<double>(), 1e-6);
    // LongRoPE's long factors and Gemma3's sliding-layer rope, where the golden records them.
    auto expect_equal = [](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
        ASSERT_EQ(got.size(), want.size()) << what;
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(got[i], want[i], 2e-7 * std::abs(want[i]) + 1e-12) << what << "[" << i << "]";
    };
    if (golden_.golden.contains("inv_freq_long")) {
        expect_equal(freq.inv_freq_long, golden_.golden["inv_freq_long"].get<std::vector<double>>(), "inv_freq_long");
    }
    if (golden_.golden.contains("attention_scaling_long")) {  // PhiMoE's long_mscale; else the same as the short one
        EXPECT_NEAR(freq.attention_scaling_long, golden_.golden["attention_scaling_long"].get<double>(), 1e-6);
    }
    if (golden_.golden.contains("inv_freq_local")) {
        ModelConfig local = decoder_->config();
        ASSERT_TRUE(local.rope_local.has_value());
        local.rope = *local.rope_local;
        expect_equal(compute_rotary_frequencies(local).inv_freq,
                     golden_.golden["inv_freq_local"].get<std::vector<double>>(), "inv_freq_local");
    }
}

// bf16_alternatives.json (the CUDA bf16 rule's paths of routing near-ties, tools/phimoe_bf16_reference.py) is read
// into its cases: each path as long as the golden one, with a margin per step, and leaving it somewhere (a path equal
// to the golden one would say nothing). phimoe_longrope's 90-token case has one (a layer-0 sparsemixer decision at
// position 55 lies 0.4% from its threshold).
TEST(GoldenModels, Bf16AlternativePathsAreReadWithTheirCases) {
    int64_t paths = 0;
    for (const std::string& name : testing_util::golden_model_names()) {
        for (const auto& c : testing_util::load_golden_model(name).cases) {
            for (const auto& path : c.bf16_alternatives) {
                ++paths;
                EXPECT_EQ(path.greedy_ids.size(), c.greedy_ids.size()) << name;
                EXPECT_EQ(path.margins.size(), c.greedy_ids.size()) << name;
                EXPECT_NE(path.greedy_ids, c.greedy_ids) << name;
            }
        }
    }
    const auto longrope = testing_util::load_golden_model("phimoe_longrope");
    ASSERT_EQ(longrope.cases.size(), 3u);
    EXPECT_EQ(longrope.cases[2].bf16_alternatives.size(), 1u);
    EXPECT_EQ(longrope.cases[2].bf16_alternatives.at(0).greedy_ids.at(21), 241);
    EXPECT_GE(paths, 1);
}

INSTANTIATE_TEST_SUITE_P(AllGoldenModels, GoldenParity, ::testing::ValuesIn(testing_util::golden_model_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace taco
