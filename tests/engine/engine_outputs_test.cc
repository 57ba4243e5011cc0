// What the engine's streams carry: the prompt travels once (the first output), so a streamed delta holds only
// what is new; merged and final outputs still have it.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace taco {
namespace {

using testing_util::golden_prompts;
using testing_util::greedy_input;
using testing_util::make_engine;

std::vector<RequestOutput> read_all(OutputStream& stream) {
    std::vector<RequestOutput> outputs;
    while (auto out = stream.next()) outputs.push_back(std::move(*out));
    return outputs;
}

TEST(EngineOutputs, StreamedDeltasCarryThePromptOnlyInTheFirstOutput) {
    auto engine = make_engine("llama");
    const std::vector<int32_t> prompt = golden_prompts("llama")[1].prompt_ids;  // 40 tokens
    auto stream = engine->submit(greedy_input(prompt, 6, 6));
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    std::vector<RequestOutput> outputs = read_all(**stream);
    ASSERT_EQ(outputs.size(), 6u);  // one token per step
    EXPECT_EQ(outputs[0].prompt_ids, prompt);
    for (size_t i = 1; i < outputs.size(); ++i) {
        EXPECT_TRUE(outputs[i].prompt_ids.empty()) << "delta " << i << " copies the prompt";
        ASSERT_EQ(outputs[i].samples.size(), 1u);
        EXPECT_EQ(outputs[i].samples[0].token_ids.size(), 1u);
    }
    EXPECT_TRUE(outputs.back().finished);
}

TEST(EngineOutputs, NSamplesStreamThePromptOnce) {
    auto engine = make_engine("llama");
    GenerationInput input;
    input.prompt_ids = {7, 8, 9, 10};
    input.params.temperature = 1.0;
    input.params.seed = 1;
    input.params.n = 2;
    input.params.max_tokens = 5;
    input.params.min_tokens = 5;
    input.params.ignore_eos = true;
    auto stream = engine->submit(input);
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    std::vector<RequestOutput> outputs = read_all(**stream);
    ASSERT_EQ(outputs.size(), 5u);
    EXPECT_EQ(outputs[0].prompt_ids, input.prompt_ids);
    EXPECT_EQ(outputs[0].samples.size(), 2u);
    for (size_t i = 1; i < outputs.size(); ++i) EXPECT_TRUE(outputs[i].prompt_ids.empty()) << "delta " << i;
}

TEST(EngineOutputs, MergedAndFinalOutputsStillHaveThePrompt) {
    auto engine = make_engine("llama");
    const std::vector<int32_t> prompt = {3, 4, 5, 6, 7};
    // generate() merges the deltas of each request.
    auto generated = engine->generate({greedy_input(prompt, 8, 8), greedy_input({9, 9}, 3, 3)});
    ASSERT_TRUE(generated[0].is_ok() && generated[1].is_ok());
    EXPECT_EQ(generated[0]->prompt_ids, prompt);
    EXPECT_EQ(generated[0]->samples.at(0).token_ids.size(), 8u);
    EXPECT_EQ(generated[1]->prompt_ids, std::vector<int32_t>({9, 9}));
    // best_of sends one final output.
    GenerationInput best = greedy_input(prompt, 4);
    best.params.temperature = 1.0;
    best.params.best_of = 3;
    auto stream = engine->submit(best);
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    std::vector<RequestOutput> outputs = read_all(**stream);
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].prompt_ids, prompt);
    // max_tokens 0: the only output, with the prompt.
    auto scored = engine->generate({greedy_input(prompt, 0)});
    ASSERT_TRUE(scored[0].is_ok()) << scored[0].status().message();
    EXPECT_EQ(scored[0]->prompt_ids, prompt);
}

}  // namespace
}  // namespace taco
