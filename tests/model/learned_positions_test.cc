// Learned absolute positions (GPT-2, OPT): the table bounds the context; the engine never schedules a position past
// it, whatever --max-model-len says.
#include <cstdint>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "golden_models.h"
#include "model/decoder.h"

namespace taco {
namespace {

std::unique_ptr<Decoder> load(const std::string& name) {
    auto decoder = Decoder::load(testing_util::models_root() + "/" + name);
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    return decoder.is_ok() ? std::move(decoder).value() : nullptr;
}

TEST(LearnedPositions, MaxPositionsIsTheTableLengthLessTheOffset) {
    auto gpt2 = load("gpt2");  // wpe [128, 64]
    auto opt = load("opt");    // embed_positions [130, 64], read at position + 2
    auto llama = load("llama");
    ASSERT_TRUE(gpt2 && opt && llama);
    EXPECT_EQ(gpt2->max_positions(), 128);
    EXPECT_EQ(opt->max_positions(), 128);
    EXPECT_EQ(llama->max_positions(), INT64_MAX);
}

TEST(LearnedPositions, EngineCapsMaxModelLenAtTheTableAndRejectsLongerRequests) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = testing_util::models_root() + "/gpt2";
    config.max_model_len = 1000;
    auto engine = Engine::create(config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    std::vector<GenerationInput> inputs(2);
    inputs[0].prompt_ids.assign(120, 7);
    inputs[0].params.max_tokens = 8;  // 128 positions: fits exactly
    inputs[0].params.min_tokens = 8;
    inputs[0].params.temperature = 0;
    inputs[1].prompt_ids.assign(120, 7);
    inputs[1].params.max_tokens = 9;
    auto outputs = (*engine)->generate(std::move(inputs));
    ASSERT_EQ(outputs.size(), 2u);
    ASSERT_TRUE(outputs[0].is_ok()) << outputs[0].status().message();
    EXPECT_EQ(outputs[0]->samples.at(0).token_ids.size(), 8u);
    ASSERT_FALSE(outputs[1].is_ok());
    EXPECT_NE(outputs[1].status().message().find("maximum context length is 128"), std::string::npos)
        << outputs[1].status().message();
}

}  // namespace
}  // namespace taco
