// LogitsSampler picks the sampler by where the logits are: host logits draw exactly BatchSampler's tokens and
// logprobs; device logits go to DeviceBatchSampler (tests/cuda/device_batch_sampler_test.cc checks it against
// BatchSampler on a GPU) and need the CUDA build and a CUDA context.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/tensor.h"
#include "exec/batch_sampler.h"
#include "exec/logits_sampler.h"

namespace taco {
namespace {

TEST(LogitsSampler, HostLogitsDrawWhatBatchSamplerDraws) {
    const int64_t vocab = 500;
    Tensor logits = Tensor::empty({3, vocab}, DType::kF32);
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (int64_t i = 0; i < logits.numel(); ++i) logits.as<float>()[i] = normal(rng);
    std::vector<SamplingParams> params(4);
    params[0].temperature = 0;
    params[1].top_p = 0.8;
    params[2].top_k = 7, params[2].logprobs = 3;
    params[3].min_p = 0.1, params[3].presence_penalty = 1.0;
    const std::vector<int32_t> output = {1, 2, 2};
    std::vector<SamplingRow> rows;
    for (size_t i = 0; i < 8; ++i) {
        SamplingRow row;
        row.logits_row = int64_t(i % 3);
        row.params = &params[i % params.size()];
        row.seed = 10 + i;
        row.draw_index = int64_t(i);
        row.output_ids = output;
        rows.push_back(row);
    }
    std::vector<SampledToken> expected(rows.size()), got(rows.size());
    BatchSampler().sample(logits, rows, expected);
    LogitsSampler sampler;
    sampler.sample(ExecContext::cpu(), logits, rows, got);
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(got[i].token, expected[i].token) << i;
        ASSERT_EQ(got[i].logprobs.has_value(), expected[i].logprobs.has_value()) << i;
        if (!got[i].logprobs) continue;
        EXPECT_EQ(got[i].logprobs->sampled.logprob, expected[i].logprobs->sampled.logprob) << i;
        ASSERT_EQ(got[i].logprobs->top.size(), expected[i].logprobs->top.size()) << i;
        for (size_t k = 0; k < got[i].logprobs->top.size(); ++k)
            EXPECT_EQ(got[i].logprobs->top[k].token, expected[i].logprobs->top[k].token) << i;
    }
}

// Death messages are matched as substrings, not as gtest's POSIX regexes: libonig (linked through the tokenizer)
// exports regcomp/regexec of its own, and under ASan, whose interceptors bind regcomp to libonig's and regexec to
// glibc's, a regex match hangs on a lock word that libonig's regex_t never set.
TEST(LogitsSamplerDeathTest, DeviceLogitsNeedTheCudaBuildAndACudaContext) {
    float fake = 0;  // never read: the checks come first
    const TensorView device_logits(&fake, DType::kF32, {1, 1}, Device::kCuda);
    const SamplingParams params;
    SamplingRow row;
    row.params = &params;
    SampledToken out;
    LogitsSampler sampler;
#if defined(TACO_WITH_CUDA)
    const char* expected = "needs a CUDA ExecContext";
#else
    const char* expected = "need the CUDA build";
#endif
    EXPECT_DEATH(sampler.sample(ExecContext::cpu(), device_logits, std::span<const SamplingRow>(&row, 1),
                                std::span<SampledToken>(&out, 1)),
                 ::testing::HasSubstr(expected));
}

}  // namespace
}  // namespace taco
