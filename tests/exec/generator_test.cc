#include "exec/generator.h"

#include <gtest/gtest.h>

namespace taco {
namespace {

std::string dir(const char* name) { return std::string(TACO_SOURCE_DIR) + "/tests/data/models/" + name; }

class Generator : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = Decoder::load(dir("llama"));
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        decoder_ = std::move(d).value();
    }
    std::unique_ptr<Decoder> decoder_;
};

TEST_F(Generator, StopsAtEosOnlyAfterMinTokens) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 12;
    // Make the first greedy token an EOS by declaring it one.
    auto free_run = generate(*decoder_, {5, 6, 7}, params, {});
    ASSERT_TRUE(free_run.is_ok());
    params.stop_token_ids = {free_run->token_ids[3]};
    auto stopped = generate(*decoder_, {5, 6, 7}, params, {});
    ASSERT_TRUE(stopped.is_ok());
    EXPECT_EQ(stopped->finish_reason, FinishReason::kStop);
    EXPECT_EQ(stopped->token_ids.back(), free_run->token_ids[3]);
    EXPECT_LE(stopped->token_ids.size(), 4u);
    params.min_tokens = 12;
    auto forced = generate(*decoder_, {5, 6, 7}, params, {});
    EXPECT_EQ(forced->finish_reason, FinishReason::kLength);
    EXPECT_EQ(forced->token_ids.size(), 12u);
}

TEST_F(Generator, ChunkedPrefillGivesTheSameTokens) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 8;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 50; ++i) prompt.push_back((i * 37) % 500);
    GenerateOptions whole, chunked;
    chunked.prefill_chunk_tokens = 7;
    chunked.block_size = 4;
    EXPECT_EQ(generate(*decoder_, prompt, params, whole)->token_ids,
              generate(*decoder_, prompt, params, chunked)->token_ids);
}

TEST_F(Generator, BadRequestsAreClearErrors) {
    SamplingParams params;
    EXPECT_NE(generate(*decoder_, {}, params, {}).status().message().find("empty"), std::string::npos);
    EXPECT_NE(generate(*decoder_, {1, 512}, params, {}).status().message().find("outside the vocabulary"),
              std::string::npos);
    params.max_tokens = 200;
    EXPECT_NE(generate(*decoder_, {1, 2}, params, {}).status().message().find("exceeds the model's maximum length 128"),
              std::string::npos);
}

TEST(DerivedMaxModelLen, FollowsVllmForEachRopeKind) {
    auto len = [](const char* name) { return derived_max_model_len(*ModelConfig::load_dir(dir(name))); };
    EXPECT_EQ(len("llama"), 128);
    EXPECT_EQ(len("llama_linear"), 64);   // 32 x 2
    EXPECT_EQ(len("llama_yarn"), 128);    // original 32 x 4
    EXPECT_EQ(len("llama_llama3"), 128);  // max_position_embeddings as is
}

}  // namespace
}  // namespace taco
