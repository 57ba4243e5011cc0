// Sliding-window perplexity (exec/perplexity.h) on the demo model against transformers' figures for the same
// windows (tests/data/demo/perplexity.json, written by tools/demo_model/train.py), and its contract.
#include "exec/perplexity.h"

#include <cmath>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "model/decoder.h"
#include "tokenizer/tokenizer.h"

namespace taco {
namespace {

const std::string kDemoDir = std::string(TACO_SOURCE_DIR) + "/models/demo";

nlohmann::json golden() {
    std::ifstream in(std::string(TACO_SOURCE_DIR) + "/tests/data/demo/perplexity.json");
    return nlohmann::json::parse(in);
}

class DemoPerplexity : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto decoder = Decoder::load(kDemoDir);
        ASSERT_TRUE(decoder) << decoder.status().message();
        decoder_ = std::move(decoder).value().release();
    }
    static void TearDownTestSuite() {
        delete decoder_;
        decoder_ = nullptr;
    }
    static Decoder* decoder_;
};

Decoder* DemoPerplexity::decoder_ = nullptr;

TEST_F(DemoPerplexity, SampleTextTokenizesAsTransformers) {
    auto tokenizer = Tokenizer::load(kDemoDir);
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    auto text = read_text_file(std::string(TACO_SOURCE_DIR) + "/" + golden()["text_file"].get<std::string>());
    ASSERT_TRUE(text) << text.status().message();
    auto ids = (*tokenizer)->encode(*text, true);
    ASSERT_TRUE(ids) << ids.status().message();
    EXPECT_EQ(*ids, golden()["token_ids"].get<std::vector<int32_t>>());
}

TEST_F(DemoPerplexity, MatchesTransformersWithinHalfAPercentForEveryWindowAndStride) {
    const nlohmann::json g = golden();
    const auto ids = g["token_ids"].get<std::vector<int32_t>>();
    ASSERT_EQ(g["cases"].size(), 3u);
    for (const auto& c : g["cases"]) {
        PerplexityOptions options;
        options.window = c["window"].get<int64_t>();
        options.stride = c["stride"].get<int64_t>();
        auto result = sliding_window_perplexity(*decoder_, ids, options);
        ASSERT_TRUE(result) << result.status().message();
        const double expected = c["perplexity"].get<double>();
        EXPECT_EQ(result->num_scored_tokens, c["scored_tokens"].get<int64_t>()) << c.dump();
        EXPECT_LT(std::abs(result->perplexity() / expected - 1), 0.005)
            << "window " << options.window << " stride " << options.stride << ": ours " << result->perplexity()
            << ", transformers " << expected;
    }
}

TEST_F(DemoPerplexity, ScoresEveryTokenButEachWindowsFirstExactlyOnce) {
    std::vector<int32_t> ids(100);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 37) % 500);
    PerplexityOptions overlapping{.window = 32, .stride = 8};
    auto a = sliding_window_perplexity(*decoder_, ids, overlapping);
    ASSERT_TRUE(a) << a.status().message();
    EXPECT_EQ(a->num_scored_tokens, 99);
    EXPECT_EQ(a->num_windows, 10);  // begins 0, 8, ..., 72; the window at 72 reaches the end
    PerplexityOptions disjoint{.window = 32, .stride = 32};
    auto b = sliding_window_perplexity(*decoder_, ids, disjoint);
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_EQ(b->num_windows, 4);
    EXPECT_EQ(b->num_scored_tokens, 100 - 4);
}

TEST_F(DemoPerplexity, ChunkedWindowForwardIsBitwiseEqualToOnePass) {
    std::vector<int32_t> ids(90);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 101 + 7) % 6000);
    PerplexityOptions whole{.window = 64, .stride = 16};
    PerplexityOptions chunked = whole;
    chunked.forward_chunk_tokens = 7;
    auto a = sliding_window_perplexity(*decoder_, ids, whole);
    auto b = sliding_window_perplexity(*decoder_, ids, chunked);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->nll_sum, b->nll_sum);
}

TEST_F(DemoPerplexity, DefaultsAreWindowMinOfMaxLengthAnd1024AndHalfStride) {
    std::vector<int32_t> ids = {10, 20, 30};
    auto r = sliding_window_perplexity(*decoder_, ids, PerplexityOptions{});
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->window, 1024);  // the demo model's max_position_embeddings is 1024
    EXPECT_EQ(r->stride, 512);
    EXPECT_EQ(r->num_scored_tokens, 2);
}

TEST_F(DemoPerplexity, RejectsBadWindowStrideAndTokens) {
    std::vector<int32_t> ids = {10, 20, 30, 40};
    auto past = sliding_window_perplexity(*decoder_, ids, {.window = 1025});
    ASSERT_FALSE(past);
    EXPECT_NE(past.status().message().find("maximum length 1024"), std::string::npos) << past.status().message();
    EXPECT_FALSE(sliding_window_perplexity(*decoder_, ids, {.window = 1}));
    EXPECT_FALSE(sliding_window_perplexity(*decoder_, ids, {.window = 4, .stride = 5}));
    EXPECT_FALSE(sliding_window_perplexity(*decoder_, ids, {.window = 4, .stride = -1}));
    std::vector<int32_t> one = {10};
    EXPECT_FALSE(sliding_window_perplexity(*decoder_, one, {}));
    std::vector<int32_t> outside = {10, 6144};
    auto bad = sliding_window_perplexity(*decoder_, outside, {});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.status().message().find("6144"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace taco
