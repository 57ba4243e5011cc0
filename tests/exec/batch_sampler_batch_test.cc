// One call samples every row of a step: each row's token and logprobs are those it gets alone, whatever
// else is in the batch, in whatever order, on however many threads.
#include <algorithm>
#include <cstring>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "batch_sampler_test_util.h"
#include "core/tensor.h"
#include "exec/batch_sampler.h"

namespace taco {
namespace {

using testing::Context;
using testing::make_row;

constexpr int64_t kVocab = 1000;

// [num_rows, kVocab]: row r has logits with spread 0.5 * (r + 1), so flat and peaked rows mix.
Tensor make_logits(int64_t num_rows) {
    Tensor logits = Tensor::empty({num_rows, kVocab}, DType::kF32);
    std::mt19937 rng(11);
    for (int64_t r = 0; r < num_rows; ++r) {
        std::normal_distribution<float> normal(0.0f, 0.5f * float(r + 1));
        for (int64_t i = 0; i < kVocab; ++i) logits.view().row<float>(r)[i] = normal(rng);
    }
    return logits;
}

std::vector<SamplingParams> mixed_params() {
    std::vector<SamplingParams> all(7);
    all[0].temperature = 0;  // greedy
    all[1].temperature = 0.8;
    all[2].top_k = 20;
    all[3].top_p = 0.9;
    all[3].repetition_penalty = 1.2;
    all[3].frequency_penalty = 0.3;
    all[4].min_p = 0.1;
    all[4].logprobs = 3;
    all[5].temperature = 1.3;
    all[5].logit_bias = {{5, 3.0f}, {6, -2.0f}};
    all[5].presence_penalty = 0.5;
    all[6].temperature = 0.5;
    all[6].top_k = 50;
    all[6].top_p = 0.95;
    all[6].min_p = 0.02;
    all[6].logprobs = 0;
    return all;
}

void expect_same(const SampledToken& got, const SampledToken& expected, const std::string& where) {
    EXPECT_EQ(got.token, expected.token) << where;
    ASSERT_EQ(got.logprobs.has_value(), expected.logprobs.has_value()) << where;
    if (!got.logprobs) return;
    EXPECT_EQ(got.logprobs->sampled.logprob, expected.logprobs->sampled.logprob) << where;
    EXPECT_EQ(got.logprobs->sampled_rank, expected.logprobs->sampled_rank) << where;
    ASSERT_EQ(got.logprobs->top.size(), expected.logprobs->top.size()) << where;
    for (size_t i = 0; i < got.logprobs->top.size(); ++i)
        EXPECT_EQ(got.logprobs->top[i].token, expected.logprobs->top[i].token) << where;
}

TEST(BatchSamplerBatch, EveryRowGetsWhatItGetsAloneInAnyOrderAndCompany) {
    const int64_t num_logits_rows = 6;
    const Tensor logits = make_logits(num_logits_rows);
    const std::vector<float> before(logits.as<float>(), logits.as<float>() + logits.numel());
    const std::vector<SamplingParams> params = mixed_params();
    const Context context{{1, 2, 3, 5, 5}, {6, 7, 7, 8}, {9, 10}}, none;
    std::mt19937 rng(5);
    BatchSampler sampler, alone_sampler;
    for (int64_t step = 0; step < 40; ++step) {
        // 12 draws over 6 logits rows: some rows serve two draws (n > 1), with other seeds and params.
        std::vector<SamplingRow> rows;
        for (int64_t i = 0; i < 12; ++i) {
            SamplingRow row =
                make_row(params[size_t(i) % params.size()], 100 + uint64_t(i), step * 3 + i, i % 2 ? context : none);
            row.logits_row = i % num_logits_rows;
            row.sampled_logprob = i == 11;
            rows.push_back(row);
        }
        std::vector<SampledToken> expected;
        for (const SamplingRow& row : rows) {
            const std::span<const float> raw(logits.view().row<float>(row.logits_row), size_t(kVocab));
            expected.push_back(alone_sampler.sample_one(raw, row));
        }
        // All at once; then one at a time through sample(); then shuffled with repeats.
        std::vector<SampledToken> out(rows.size());
        sampler.sample(logits, rows, out);
        for (size_t i = 0; i < rows.size(); ++i) expect_same(out[i], expected[i], "batch, row " + std::to_string(i));
        for (size_t i = 0; i < rows.size(); ++i) {
            SampledToken single;
            sampler.sample(logits, std::span<const SamplingRow>(&rows[i], 1), std::span<SampledToken>(&single, 1));
            expect_same(single, expected[i], "single, row " + std::to_string(i));
        }
        std::vector<size_t> order;
        for (size_t i = 0; i < 3 * rows.size(); ++i) order.push_back(rng() % rows.size());
        std::vector<SamplingRow> shuffled;
        for (size_t i : order) shuffled.push_back(rows[i]);
        std::vector<SampledToken> shuffled_out(shuffled.size());
        sampler.sample(logits, shuffled, shuffled_out);
        for (size_t j = 0; j < order.size(); ++j)
            expect_same(shuffled_out[j], expected[order[j]], "shuffled, row " + std::to_string(order[j]));
        if (::testing::Test::HasFailure()) return;
    }
    // The logits are read only.
    EXPECT_EQ(std::memcmp(before.data(), logits.as<float>(), before.size() * sizeof(float)), 0);
}

TEST(BatchSamplerBatch, ManyRowsOverThreadsMatchOneAtATime) {
    const int64_t num_rows = 97;
    const Tensor logits = make_logits(num_rows);
    const std::vector<SamplingParams> params = mixed_params();
    const Context context{{4, 4, 4}, {12, 13}, {}}, none;
    std::vector<SamplingRow> rows;
    for (int64_t r = 0; r < num_rows; ++r) {
        SamplingRow row = make_row(params[size_t(r) % params.size()], uint64_t(r) * 7919, r, r % 3 ? context : none);
        row.logits_row = num_rows - 1 - r;
        rows.push_back(row);
    }
    BatchSampler sampler;
    for (int repeat = 0; repeat < 3; ++repeat) {  // scratch reused across calls leaves nothing behind
        std::vector<SampledToken> out(rows.size());
        sampler.sample(logits, rows, out);
        for (size_t i = 0; i < rows.size(); ++i) {
            const std::span<const float> raw(logits.view().row<float>(rows[i].logits_row), size_t(kVocab));
            expect_same(out[i], BatchSampler().sample_one(raw, rows[i]), "row " + std::to_string(i));
        }
    }
}

TEST(BatchSamplerBatch, SeededDrawsRepeatExactlyOverManySteps) {
    const Tensor logits = make_logits(2);
    SamplingParams params;
    params.top_p = 0.97;
    BatchSampler sampler;
    std::vector<int32_t> first, neighbour_first;
    for (int64_t step = 0; step < 300; ++step) {
        SamplingRow row = make_row(params, 1234, step);
        SampledToken out;
        sampler.sample(logits, std::span<const SamplingRow>(&row, 1), std::span<SampledToken>(&out, 1));
        first.push_back(out.token);
    }
    // Same seed and draw indices, now second in a batch behind an unseeded neighbour on the other row.
    SamplingParams other;
    other.temperature = 1.7;
    for (int64_t step = 0; step < 300; ++step) {
        SamplingRow neighbour = make_row(other, 99 + uint64_t(step), step * 5);
        neighbour.logits_row = 1;
        const SamplingRow rows[2] = {neighbour, make_row(params, 1234, step)};
        SampledToken out[2];
        sampler.sample(logits, rows, out);
        ASSERT_EQ(out[1].token, first[size_t(step)]) << "step " << step;
    }
    EXPECT_GT(std::set<int32_t>(first.begin(), first.end()).size(), 50u);  // really random
}

TEST(BatchSamplerBatch, EmptyBatchIsANoOp) {
    BatchSampler sampler;
    sampler.sample(TensorView(), {}, {});
}

// Death messages are matched as substrings, not as gtest's POSIX regexes: libonig (linked through the tokenizer)
// exports regcomp/regexec of its own, and under ASan, whose interceptors bind regcomp to libonig's and regexec to
// glibc's, a regex match hangs on a lock word that libonig's regex_t never set.
TEST(BatchSamplerBatchDeathTest, RejectsRowsOutsideTheTensorAndWrongLogits) {
    const Tensor logits = make_logits(2);
    const SamplingParams params;
    SamplingRow row = make_row(params, 0, 0);
    row.logits_row = 2;
    SampledToken out;
    BatchSampler sampler;
    EXPECT_DEATH(sampler.sample(logits, std::span<const SamplingRow>(&row, 1), std::span<SampledToken>(&out, 1)),
                 ::testing::HasSubstr("logits row 2 of 2"));
    row.logits_row = 0;
    Tensor halves = Tensor::empty({2, kVocab}, DType::kF16);
    EXPECT_DEATH(sampler.sample(halves, std::span<const SamplingRow>(&row, 1), std::span<SampledToken>(&out, 1)),
                 ::testing::HasSubstr("f32 host tensor"));
}

}  // namespace
}  // namespace taco
