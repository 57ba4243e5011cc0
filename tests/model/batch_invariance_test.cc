// Batch invariance (ARCHITECTURE.md, "Parity rule"): a token's logits are bitwise the same alone or batched
// with other sequences, in one prefill or in chunks, in prefill or in decode, whatever the block placement.
#include <gtest/gtest.h>

#include "batch_runner.h"
#include "golden_models.h"

namespace taco {
namespace {

using testing_util::run_chunked;
using testing_util::run_together;
using testing_util::SequenceSpec;

std::vector<int32_t> ids_of(const testing_util::GoldenModel& m, size_t c) {
    auto ids = m.cases[c].prompt_ids;
    ids.insert(ids.end(), m.cases[c].greedy_ids.begin(), m.cases[c].greedy_ids.end());
    return ids;
}

class BatchInvariance : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchInvariance, LogitsAreBitwiseEqualAloneBatchedChunkedAndDecoded) {
    auto golden = testing_util::load_golden_model(GetParam());
    auto decoder = Decoder::load(golden.dir);
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
    Decoder& d = **decoder;
    const auto a = ids_of(golden, 1), b = ids_of(golden, 0), c = ids_of(golden, 2);

    const auto alone = run_together(d, {SequenceSpec{a}}, 16, 1)[0];
    const auto batched = run_together(d, {SequenceSpec{b}, SequenceSpec{a}, SequenceSpec{c}}, 16, 7);
    const auto small_blocks = run_together(d, {SequenceSpec{c}, SequenceSpec{a}}, 4, 3)[1];
    const auto chunked = run_chunked(d, a, 5, 16);
    const auto decoded = run_chunked(d, a, 1, 8);  // every token a decode step over the cache
    ASSERT_EQ(alone.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(alone[i], batched[1][i]) << "batched with others, token " << i;
        ASSERT_EQ(alone[i], small_blocks[i]) << "block size 4, token " << i;
        ASSERT_EQ(alone[i], chunked[i]) << "chunked prefill, token " << i;
        ASSERT_EQ(alone[i], decoded[i]) << "decode, token " << i;
    }
    // The other sequences of the batch are unaffected too.
    EXPECT_EQ(batched[0], run_together(d, {SequenceSpec{b}}, 16, 9)[0]);
}

INSTANTIATE_TEST_SUITE_P(AllGoldenModels, BatchInvariance,
                         ::testing::Values("llama", "mistral", "qwen2", "llama_yarn", "llama_bias_tied", "gemma",
                                           "qwen3", "phi3_longrope", "phi3_partial", "stablelm_qknorm_parallel",
                                           "starcoder2", "gemma2", "gemma3", "nemotron",
                                           // MoE
                                           "mixtral", "qwen2_moe", "qwen3_moe", "phimoe", "phimoe_longrope"),
                         [](const auto& info) { return info.param; });
// GPT-style families: learned positions + Conv1D, post-norm + project_in/out, per-head fused qkv + parallel
// residual, interleaved partial rotary, per-kv-group qkv, ALiBi.
INSTANTIATE_TEST_SUITE_P(GptStyleGoldenModels, BatchInvariance,
                         ::testing::Values("gpt2", "opt_proj", "gpt_neox", "gptj", "falcon_new", "bloom",
                                           "phi_qk_layernorm", "falcon_alibi_16heads"),
                         [](const auto& info) { return info.param; });
// Remote-code families: interleaved half-head rotary + fused gate/up (ChatGLM), Qwen v1, W_pack
// (Baichuan), q/k/v/o biases (InternLM), grouped wqkv (InternLM2), ALiBi + NormHead (Baichuan2-13B).
INSTANTIATE_TEST_SUITE_P(RemoteCodeGoldenModels, BatchInvariance,
                         ::testing::Values("chatglm3", "qwen", "baichuan", "internlm", "internlm2", "baichuan2_13b"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace taco
