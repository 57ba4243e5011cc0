// Prompt logprobs (SamplingParams::prompt_logprobs) and prompt-only requests (max_tokens 0): each prompt token's
// logprob is the log-softmax of the raw logits at the position before it, exactly as a separate forward pass over
// that prefix gives it, whatever the batching, chunking or prefix cache; it comes once, in the first output.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "exec/forward_executor.h"
#include "exec/sample_logprobs.h"
#include "model/decoder.h"
#include "model/kv_cache_tensors.h"

namespace taco {
namespace {

using testing_util::golden_prompts;
using testing_util::make_engine;
using testing_util::model_dir;

constexpr int64_t kTop = 3;

// The logprobs of prompt tokens 1.., each from a fresh forward pass over the tokens before it.
std::vector<SampleLogprobs> reference_prompt_logprobs(const std::string& model, const std::vector<int32_t>& prompt,
                                                      int64_t top) {
    auto decoder = Decoder::load(model_dir(model));
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    if (!decoder.is_ok()) return {};
    const ModelConfig& config = (*decoder)->config();
    constexpr int64_t kBlockSize = 16;
    const int64_t num_blocks = (int64_t(prompt.size()) + kBlockSize - 1) / kBlockSize;
    std::vector<int32_t> table;
    for (int64_t b = 0; b < num_blocks; ++b) table.push_back(int32_t(b));
    std::vector<SampleLogprobs> out;
    for (size_t k = 1; k < prompt.size(); ++k) {
        KvCacheTensors kv = KvCacheTensors::allocate(config, num_blocks, kBlockSize);
        RunnerSequence seq;
        seq.token_ids = std::span<const int32_t>(prompt.data(), k);
        seq.num_new_tokens = int64_t(k);
        seq.block_table = table;
        seq.wants_logits = true;
        ExecutorOptions options;
        options.max_num_tokens = int64_t(k);
        options.max_num_sequences = 1;
        options.max_model_len = num_blocks * kBlockSize;
        options.block_size = kBlockSize;
        ForwardExecutor executor(**decoder, options);
        const TensorView logits = executor.execute({&seq, 1}, kv);
        out.push_back(logprobs_of({logits.as<float>(), size_t(config.vocab_size)}, prompt[k], top));
    }
    return out;
}

void expect_same(const std::vector<SampleLogprobs>& got, const std::vector<SampleLogprobs>& want,
                 const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].sampled.token, want[i].sampled.token) << what << " position " << i;
        EXPECT_EQ(got[i].sampled.logprob, want[i].sampled.logprob) << what << " position " << i;  // bitwise
        EXPECT_EQ(got[i].sampled_rank, want[i].sampled_rank) << what << " position " << i;
        ASSERT_EQ(got[i].top.size(), want[i].top.size()) << what << " position " << i;
        for (size_t t = 0; t < got[i].top.size(); ++t) {
            EXPECT_EQ(got[i].top[t].token, want[i].top[t].token) << what << " position " << i;
            EXPECT_EQ(got[i].top[t].logprob, want[i].top[t].logprob) << what << " position " << i;
        }
    }
}

GenerationInput scoring_input(const std::vector<int32_t>& prompt, int64_t max_tokens) {
    GenerationInput input = testing_util::greedy_input(prompt, max_tokens);
    input.params.prompt_logprobs = kTop;
    return input;
}

TEST(PromptLogprobs, EqualLogSoftmaxOfEachPrefixRunAlone) {
    for (const char* model : {"llama", "qwen2"}) {
        auto engine = make_engine(model);
        auto prompts = golden_prompts(model);
        std::vector<GenerationInput> inputs;
        for (const auto& p : prompts) inputs.push_back(scoring_input(p.prompt_ids, 0));
        auto outputs = engine->generate(inputs);  // batched together
        for (size_t i = 0; i < prompts.size(); ++i) {
            ASSERT_TRUE(outputs[i].is_ok()) << outputs[i].status().message();
            const RequestOutput& out = *outputs[i];
            expect_same(out.prompt_logprobs, reference_prompt_logprobs(model, prompts[i].prompt_ids, kTop),
                        std::string(model) + " case " + std::to_string(i));
            ASSERT_EQ(out.samples.size(), 1u);
            EXPECT_TRUE(out.samples[0].token_ids.empty());  // max_tokens 0: the prompt only
            EXPECT_EQ(out.samples[0].finish_reason, FinishReason::kLength);
        }
        EXPECT_EQ(engine->stats().generation_tokens_total, 0);
        EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
    }
}

TEST(PromptLogprobs, PrefixCacheChunkedPrefillAndPreemptionDoNotChangeThem) {
    std::vector<int32_t> prompt;  // 40 tokens: several blocks and chunks
    for (int32_t i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % 200);
    const auto want = reference_prompt_logprobs("llama", prompt, kTop);

    // The same prompt is cached by a first request; the scoring request must still compute every position.
    auto cached = make_engine("llama", 0, 0, 8192, 256, /*prefix_caching=*/true);
    ASSERT_TRUE(cached->generate({testing_util::greedy_input(prompt, 2)}).at(0).is_ok());
    auto out = cached->generate({scoring_input(prompt, 0)}).at(0);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out->num_cached_tokens, 0);
    expect_same(out->prompt_logprobs, want, "after a cached copy of the prompt");
    // A request without prompt logprobs still hits the cache.
    auto hit = cached->generate({testing_util::greedy_input(prompt, 1)}).at(0);
    ASSERT_TRUE(hit.is_ok());
    EXPECT_GT(hit->num_cached_tokens, 0);

    // Chunks of 7 tokens: the prompt's logits come over several steps.
    auto chunked = make_engine("llama", 0, 0, /*max_num_batched_tokens=*/7);
    out = chunked->generate({scoring_input(prompt, 0)}).at(0);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    expect_same(out->prompt_logprobs, want, "chunked prefill");

    // A KV pool too small for all at once: requests are preempted and recomputed.
    auto tiny = make_engine("llama", /*num_device_blocks=*/16, 0, 8192, 256, true);
    std::vector<GenerationInput> inputs;
    for (int i = 0; i < 6; ++i) inputs.push_back(scoring_input(prompt, 20));
    auto outputs = tiny->generate(inputs);
    for (auto& o : outputs) {
        ASSERT_TRUE(o.is_ok()) << o.status().message();
        expect_same(o->prompt_logprobs, want, "under preemption");
        EXPECT_EQ(o->samples.at(0).token_ids.size(), 20u);
    }
}

TEST(PromptLogprobs, ComeOnceInTheFirstOutputAndLeaveTheTokensUnchanged) {
    const auto prompts = golden_prompts("llama");
    auto engine = make_engine("llama");
    auto stream = engine->submit(scoring_input(prompts[1].prompt_ids, 8));
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    std::vector<int32_t> tokens;
    int64_t num_outputs = 0;
    while (auto out = (*stream)->next()) {
        if (num_outputs++ == 0)
            EXPECT_EQ(out->prompt_logprobs.size(), prompts[1].prompt_ids.size() - 1);
        else
            EXPECT_TRUE(out->prompt_logprobs.empty());
        for (const SampleOutput& s : out->samples) tokens.insert(tokens.end(), s.token_ids.begin(), s.token_ids.end());
    }
    EXPECT_GT(num_outputs, 1);
    auto plain = engine->generate({testing_util::greedy_input(prompts[1].prompt_ids, 8)}).at(0);
    ASSERT_TRUE(plain.is_ok());
    EXPECT_EQ(tokens, plain->samples.at(0).token_ids);
    EXPECT_TRUE(plain->prompt_logprobs.empty());  // not asked for
}

TEST(PromptLogprobs, PromptOnlyRequestWithSeveralSamplesEndsEachWithLength) {
    auto engine = make_engine("llama");
    GenerationInput input;
    input.prompt_ids = {1, 5, 9, 13};
    input.params.n = 2;
    input.params.best_of = 3;
    input.params.max_tokens = 0;
    input.params.prompt_logprobs = 0;
    auto out = engine->generate({input}).at(0);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    ASSERT_EQ(out->samples.size(), 2u);
    for (const SampleOutput& s : out->samples) {
        EXPECT_TRUE(s.token_ids.empty());
        EXPECT_EQ(s.finish_reason, FinishReason::kLength);
    }
    ASSERT_EQ(out->prompt_logprobs.size(), 3u);
    for (const SampleLogprobs& lp : out->prompt_logprobs) EXPECT_TRUE(lp.top.empty());
    EXPECT_EQ(out->prompt_logprobs[0].sampled.token, 5);
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
}

}  // namespace
}  // namespace taco
