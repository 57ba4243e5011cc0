#include "exec/batch_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "batch_sampler_test_util.h"
#include "exec/philox.h"
#include "exec/token_filter.h"

namespace taco {
namespace {

using testing::Context;
using testing::draw;
using testing::logits_of;
using testing::make_row;
using testing::random_params;
using testing::support;

const std::vector<float> kLogits = {1.0f, 3.0f, 3.0f, 2.0f, -1.0f};
constexpr float kInf = std::numeric_limits<float>::infinity();

// The logits after suppressed ids, logit bias and penalties.
std::vector<float> processed(const SamplingParams& params, std::vector<float> logits, const Context& context) {
    BatchSampler::process_logits(logits, make_row(params, 0, 0, context));
    return logits;
}

int32_t sample_token(const SamplingParams& params, const std::vector<float>& logits, const Context& context = {}) {
    BatchSampler sampler;
    return sampler.sample_one(logits, make_row(params, 0, 0, context)).token;
}

TEST(BatchSampler, GreedyPicksArgmaxWithLowestIdOnTies) {
    const SamplingParams params = random_params(0.0);
    EXPECT_EQ(sample_token(params, kLogits), 1);
    const Context eos{{}, {}, {1}};  // EOS before min_tokens
    EXPECT_EQ(sample_token(params, kLogits, eos), 2);
    EXPECT_EQ(processed(params, kLogits, eos)[1], -kInf);
}

TEST(BatchSampler, GreedyOrdersNaNBelowEverything) {
    const SamplingParams params = random_params(0.0);
    EXPECT_EQ(sample_token(params, {NAN, -5.0f, NAN}), 1);
    EXPECT_EQ(sample_token(params, {-kInf, NAN, -kInf}), 0);  // nothing finite: the first of the -inf
}

TEST(BatchSampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfSeenTokens) {
    SamplingParams params = random_params(0.0);
    params.repetition_penalty = 2.0;
    // Token 0 (prompt, positive) and 4 (prompt, negative), 1 (output, negative); 2 and 3 unseen.
    const auto out = processed(params, {2.0f, -1.0f, 0.5f, 3.0f, -0.5f}, {{0, 0, 4}, {1}, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -1.0f}));
}

TEST(BatchSampler, FrequencyPenaltySubtractsCountTimesPenaltyOverOutputOnly) {
    SamplingParams params = random_params(0.0);
    params.frequency_penalty = 0.5;
    const auto out = processed(params, {1.0f, 1.0f, 1.0f, 1.0f}, {{0}, {2, 2, 3, 2}, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f, -0.5f, 0.5f}));
}

TEST(BatchSampler, PresencePenaltySubtractsOnceForTokensInOutput) {
    SamplingParams params = random_params(0.0);
    params.presence_penalty = -0.25;  // negative: encourages repeats
    const auto out = processed(params, {1.0f, 1.0f, 1.0f, 1.0f}, {{0}, {2, 2, 3}, {}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f, 1.25f, 1.25f}));
}

TEST(BatchSampler, PenaltiesApplyAfterLogitBiasInVllmOrder) {
    SamplingParams params = random_params(0.0);
    params.logit_bias = {{0, 1.0f}};
    params.repetition_penalty = 1.5;
    params.frequency_penalty = 0.5;
    params.presence_penalty = 0.25;
    // token 0: (2 + 1) / 1.5 - 2 * 0.5 - 0.25 = 0.75; token 1: -1 * 1.5 (prompt only: no frequency/presence).
    const auto out = processed(params, {2.0f, -1.0f, 0.3f}, {{1}, {0, 0}, {}});
    EXPECT_FLOAT_EQ(out[0], 0.75f);
    EXPECT_FLOAT_EQ(out[1], -1.5f);
    EXPECT_FLOAT_EQ(out[2], 0.3f);
    // The draw sees the processed logits: greedy picks 0 (0.75 > 0.3).
    EXPECT_EQ(sample_token(params, {2.0f, -1.0f, 0.3f}, {{1}, {0, 0}, {}}), 0);
}

TEST(BatchSampler, PenaltiesIgnoreIdsOutsideTheVocabulary) {
    SamplingParams params = random_params(0.0);
    params.repetition_penalty = 2.0;
    params.frequency_penalty = 1.0;
    params.logit_bias = {{99, 5.0f}};
    const auto out = processed(params, {1.0f, 2.0f, 3.0f}, {{-3, 7}, {5, 1}, {-1, 64}});
    EXPECT_EQ(out, (std::vector<float>{1.0f, 0.0f, 3.0f}));
}

TEST(BatchSampler, LogitBiasMakesATokenCertainOrImpossible) {
    SamplingParams params = random_params(1.0);
    params.logit_bias = {{4, 100.0f}};
    EXPECT_EQ(support(draw(params, kLogits, 500)), (std::set<int32_t>{4}));

    params.logit_bias = {{1, -100.0f}, {2, -100.0f}};
    EXPECT_EQ(support(draw(params, kLogits, 4000)), (std::set<int32_t>{0, 3, 4}));

    params = random_params(0.0);
    params.logit_bias = {{0, 2.5f}};  // greedy follows the biased logits: 1 + 2.5 > 3
    EXPECT_EQ(sample_token(params, kLogits), 0);
}

TEST(BatchSampler, LogitBiasIsClampedToPlusMinus100AsVllm) {
    SamplingParams params = random_params(0.0);
    params.logit_bias = {{0, 1000.0f}, {1, -1000.0f}};
    const auto out = processed(params, {1.0f, 3.0f, 2.0f}, {});
    EXPECT_EQ(out[0], 101.0f);
    EXPECT_EQ(out[1], -97.0f);
}

TEST(BatchSampler, SuppressedIdsAreNeverDrawn) {
    const SamplingParams params = random_params(1.5);
    EXPECT_EQ(support(draw(params, kLogits, 3000, 5, {{}, {}, {1, 2, 3}})), (std::set<int32_t>{0, 4}));
}

TEST(BatchSampler, TopKKeepsTokensTiedWithTheKthLogit) {
    SamplingParams params = random_params(1.0);
    params.top_k = 1;  // ids 1 and 2 share the largest logit: vLLM keeps both
    EXPECT_EQ(support(draw(params, kLogits, 400)), (std::set<int32_t>{1, 2}));
    params.top_k = 3;
    EXPECT_EQ(support(draw(params, kLogits, 2000)), (std::set<int32_t>{1, 2, 3}));
    params.top_k = -1;  // off
    EXPECT_EQ(support(draw(params, kLogits, 4000)), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

TEST(BatchSampler, TopPKeepsTheSmallestNucleusReachingP) {
    const auto logits = logits_of({0.1, 0.4, 0.3, 0.2});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.5;  // 0.4 < 0.5 <= 0.4 + 0.3
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{1, 2}));
    params.top_p = 0.35;  // the top token alone
    EXPECT_EQ(support(draw(params, logits, 500)), (std::set<int32_t>{1}));
    params.top_p = 0.01;  // never fewer than one token
    EXPECT_EQ(support(draw(params, logits, 200)), (std::set<int32_t>{1}));
    params.top_p = 0.95;
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(BatchSampler, MinPIsRelativeToTheMostLikelyTokenAfterTemperature) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.min_p = 0.3;  // relative probabilities 1, 0.75, 0.5, 0.25
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
    params.temperature = 0.5;  // relative probabilities 1, 0.5625, 0.25, 0.0625
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1}));
    params.min_p = 1.0;
    EXPECT_EQ(support(draw(params, logits, 300)), (std::set<int32_t>{0}));
}

TEST(BatchSampler, TopPWorksOnTheDistributionLeftByTopK) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.5;
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{0, 1}));
    params.top_k = 2;  // renormalised to 4/7, 3/7: 4/7 alone reaches 0.5
    EXPECT_EQ(support(draw(params, logits, 2000)), (std::set<int32_t>{0}));
}

TEST(BatchSampler, MinPAppliesBeforeTopP) {
    const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
    SamplingParams params = random_params(1.0);
    params.top_p = 0.75;  // alone: 0.4 + 0.3 < 0.75, so three tokens
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1, 2}));
    params.min_p = 0.5;  // drops token 3 first; renormalised 4/9 + 3/9 >= 0.75
    EXPECT_EQ(support(draw(params, logits, 4000)), (std::set<int32_t>{0, 1}));
}

TEST(BatchSampler, NaNLogitsAreNeverDrawn) {
    const SamplingParams params = random_params(2.0);
    EXPECT_EQ(support(draw(params, {NAN, 0.0f, NAN, 0.5f, -kInf}, 2000)), (std::set<int32_t>{1, 3}));
    SamplingParams top_p = params;
    top_p.top_p = 0.9;
    EXPECT_EQ(support(draw(top_p, {NAN, 0.0f, NAN, 0.5f}, 2000)), (std::set<int32_t>{1, 3}));
}

TEST(BatchSampler, ImpossibleEverywhereOrAnInfiniteLogitGivesTheArgmax) {
    for (double top_p : {1.0, 0.5}) {
        SamplingParams params = random_params(1.0);
        params.top_p = top_p;
        EXPECT_EQ(sample_token(params, {-kInf, -kInf, -kInf}), 0);
        EXPECT_EQ(sample_token(params, {NAN, NAN}), 0);
        EXPECT_EQ(support(draw(params, {1.0f, kInf, 2.0f, kInf}, 200)), (std::set<int32_t>{1}));
    }
}

TEST(BatchSampler, HugeLogitsAndTemperaturesStayFinite) {
    // (logit - max) / temperature: no overflow for the likely tokens even at the 0.01 floor.
    SamplingParams params = random_params(1e-9);
    EXPECT_EQ(support(draw(params, {3e38f, -3e38f, 3e38f}, 500)), (std::set<int32_t>{0, 2}));
    params.temperature = 1e300;  // flat: every finite token
    EXPECT_EQ(support(draw(params, {1e30f, -1e30f, 0.0f, -kInf}, 500)), (std::set<int32_t>{0, 1, 2}));
}

// The draw is exactly the Gumbel-max over TokenFilter's allowed set, written out without the sampler's
// shortcuts (no cut-off, every key computed): what a GPU kernel would do.
int32_t reference_draw(const SamplingParams& p, const std::vector<float>& logits, uint64_t seed, int64_t draw) {
    const std::vector<int32_t> allowed = TokenFilter::allowed_tokens(p, logits);
    if (allowed.empty()) return -1;
    float max_logit = -kInf;
    for (float v : logits)
        if (!std::isnan(v)) max_logit = std::max(max_logit, v);
    const float temperature = float(std::max(p.temperature, 0.01));
    int32_t best = -1;
    float best_key = -kInf;
    for (int32_t token : allowed) {  // ascending: the first of equal keys wins
        const float key = gumbel_key(logits[size_t(token)], max_logit, temperature, gumbel_noise(seed, draw, token));
        if (best < 0 || key > best_key) best = token, best_key = key;
    }
    return best;
}

TEST(BatchSampler, DrawIsTheGumbelMaxOverTheAllowedTokens) {
    std::mt19937 rng(3);
    BatchSampler sampler;
    int checked = 0;
    for (float spread : {0.05f, 3.0f, 12.0f}) {  // flat to peaked
        std::normal_distribution<float> normal(0.0f, spread);
        std::vector<float> logits(3001);
        for (float& v : logits) v = normal(rng);
        for (double temperature : {0.3, 1.0, 1.7})
            for (int64_t top_k : {0, 1, 50})
                for (double top_p : {1.0, 0.9})
                    for (double min_p : {0.0, 0.05}) {
                        SamplingParams p = random_params(temperature);
                        p.top_k = top_k;
                        p.top_p = top_p;
                        p.min_p = min_p;
                        for (int64_t d = 0; d < 8; ++d, ++checked) {
                            const uint64_t seed = 1000 + uint64_t(d) * 77;
                            ASSERT_EQ(sampler.sample_one(logits, make_row(p, seed, d)).token,
                                      reference_draw(p, logits, seed, d))
                                << "spread " << spread << " t " << temperature << " k " << top_k << " p " << top_p
                                << " min_p " << min_p << " draw " << d;
                        }
                    }
    }
    EXPECT_EQ(checked, 3 * 3 * 3 * 2 * 2 * 8);
}

// Without filters the sampler rules most tokens out by a cut-off on their logit and a bound on their noise;
// flat rows are where a wrong cut-off would show (the winning noise is large there).
TEST(BatchSampler, UnfilteredDrawIsTheGumbelMaxOverManyDraws) {
    std::mt19937 rng(4);
    BatchSampler sampler;
    for (float spread : {0.0f, 0.05f, 1.0f, 3.0f}) {
        std::normal_distribution<float> normal(0.0f, std::max(spread, 1e-30f));
        std::vector<float> logits(3000);
        for (float& v : logits) v = spread > 0 ? normal(rng) : 0.5f;
        for (double temperature : {1.0, 0.5}) {
            const SamplingParams p = random_params(temperature);
            for (int64_t d = 0; d < 300; ++d)
                ASSERT_EQ(sampler.sample_one(logits, make_row(p, 77, d)).token, reference_draw(p, logits, 77, d))
                    << "spread " << spread << " t " << temperature << " draw " << d;
        }
    }
}

TEST(BatchSampler, TokensDependOnSeedAndDrawIndex) {
    const SamplingParams params = random_params(1.0);
    const std::vector<float> flat(64, 0.0f);
    BatchSampler sampler;
    int same_seed = 0, same_draw = 0;
    for (int64_t d = 0; d < 100; ++d) {
        const int32_t token = sampler.sample_one(flat, make_row(params, 1, d)).token;
        same_seed += sampler.sample_one(flat, make_row(params, 2, d)).token == token;
        same_draw += sampler.sample_one(flat, make_row(params, 1, d + 100)).token == token;
        EXPECT_EQ(sampler.sample_one(flat, make_row(params, 1, d)).token, token);
    }
    EXPECT_LT(same_seed, 10);  // 1/64 by chance
    EXPECT_LT(same_draw, 10);
}

}  // namespace
}  // namespace taco
