// The grammar mask of SamplingRow::allowed_tokens (structured output): only allowed tokens are drawn, and the
// logprobs are those of the masked logits.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "batch_sampler_test_util.h"
#include "exec/batch_sampler.h"

namespace taco {
namespace {

using testing::make_row;
using testing::random_params;

// 40 tokens (two mask words), the largest logits on the tokens the masks below leave out.
std::vector<float> logits40() {
    std::vector<float> logits(40);
    for (int i = 0; i < 40; ++i) logits[size_t(i)] = float(i % 7) - (i == 3 ? -10.0f : 0.0f);
    return logits;
}

std::vector<uint32_t> mask_of(std::initializer_list<int> ids) {
    std::vector<uint32_t> words(2, 0);
    for (int id : ids) words[size_t(id) / 32] |= uint32_t(1) << (id % 32);
    return words;
}

TEST(BatchSamplerMask, GreedyPicksTheBestAllowedToken) {
    const SamplingParams params = random_params(0.0);
    const std::vector<uint32_t> mask = mask_of({0, 7, 33});  // logits 0, 0 and 5
    SamplingRow row = make_row(params, 0, 0);
    row.allowed_tokens = mask;
    BatchSampler sampler;
    EXPECT_EQ(sampler.sample_one(logits40(), row).token, 33);
    row.allowed_tokens = {};
    EXPECT_EQ(sampler.sample_one(logits40(), row).token, 3);  // unmasked: the largest logit
}

TEST(BatchSamplerMask, RandomDrawsStayInsideTheMaskAndLogprobsAreRenormalised) {
    SamplingParams params = random_params(1.5);
    params.top_k = 5;
    params.logprobs = 2;
    const std::vector<uint32_t> mask = mask_of({1, 2, 31, 32, 39});
    BatchSampler sampler;
    std::vector<int> seen(40, 0);
    for (int i = 0; i < 400; ++i) {
        SamplingRow row = make_row(params, 11, i);
        row.allowed_tokens = mask;
        const SampledToken t = sampler.sample_one(logits40(), row);
        ASSERT_TRUE(((mask[size_t(t.token) / 32] >> (t.token % 32)) & 1)) << t.token;
        seen[size_t(t.token)]++;
        ASSERT_TRUE(t.logprobs.has_value());
        for (const TokenLogprob& top : t.logprobs->top)
            EXPECT_TRUE(((mask[size_t(top.token) / 32] >> (top.token % 32)) & 1));
    }
    for (int id : {1, 2, 31, 32, 39}) EXPECT_GT(seen[size_t(id)], 0) << id;
    // The probabilities of the allowed tokens sum to one.
    SamplingRow row = make_row(params, 11, 0);
    row.allowed_tokens = mask;
    params.logprobs = 5;
    const SampledToken t = sampler.sample_one(logits40(), row);
    double total = 0;
    for (const TokenLogprob& top : t.logprobs->top) total += std::exp(top.logprob);
    EXPECT_NEAR(total, 1.0, 1e-6);  // logprobs are floats
}

TEST(BatchSamplerMask, BatchedRowsWithMasksDrawWhatTheyDrawAlone) {
    const SamplingParams params = random_params(0.8);
    std::vector<float> logits;
    for (int r = 0; r < 3; ++r)
        for (float x : logits40()) logits.push_back(x + float(r));
    const std::vector<uint32_t> masks[3] = {mask_of({5, 6, 7}), {}, mask_of({0, 38})};
    std::vector<SamplingRow> rows;
    for (int r = 0; r < 3; ++r) {
        SamplingRow row = make_row(params, 100 + uint64_t(r), 4);
        row.logits_row = r;
        row.allowed_tokens = masks[r];
        rows.push_back(row);
    }
    BatchSampler sampler;
    std::vector<SampledToken> out(3);
    sampler.sample(TensorView(logits.data(), DType::kF32, {3, 40}), rows, out);
    for (int r = 0; r < 3; ++r) {
        const std::span<const float> one(logits.data() + 40 * r, 40);
        EXPECT_EQ(out[size_t(r)].token, sampler.sample_one(one, rows[size_t(r)]).token) << r;
    }
}

}  // namespace
}  // namespace taco
