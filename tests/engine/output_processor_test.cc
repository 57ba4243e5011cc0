// OutputProcessor alone: the stop rules (stop ids, EOS, length, stop strings), the whole sample, and what each
// output carries (the prompt and the prompt logprobs once).
#include "engine/output_processor.h"

#include <gtest/gtest.h>

namespace taco {
namespace {

const std::vector<int32_t> kPrompt = {1, 2, 3};
constexpr int32_t kEos = 2;

SamplingParams params_with(int64_t max_tokens) {
    SamplingParams p;
    p.max_tokens = max_tokens;
    return p;
}

OutputProcessor make(const SamplingParams& p, const Tokenizer* tokenizer = nullptr, int64_t num_samples = 1) {
    OutputProcessor out(7, kPrompt, p, tokenizer, {kEos}, num_samples);
    for (int64_t i = 0; i < num_samples; ++i) out.add_sample(i);
    return out;
}

TEST(OutputProcessor, AStopTokenIdEndsTheSampleAndIsItsStopReason) {
    SamplingParams p = params_with(10);
    p.stop_token_ids = {9};
    OutputProcessor out = make(p);
    EXPECT_EQ(out.append_token(0, 5, nullptr, 0, false), std::nullopt);
    EXPECT_EQ(out.append_token(0, 9, nullptr, 0, false), FinishReason::kStop);
    auto delta = out.take_delta(true, 0);
    ASSERT_TRUE(delta.has_value());
    ASSERT_EQ(delta->samples.size(), 2u);
    EXPECT_EQ(delta->samples[0].finish_reason, std::nullopt);
    EXPECT_EQ(delta->samples[1].token_ids, std::vector<int32_t>({9}));
    EXPECT_EQ(delta->samples[1].stop_token_id, 9);
    EXPECT_EQ(delta->samples[1].stop_reason, "");
    EXPECT_EQ(out.output_ids(0), std::vector<int32_t>({5, 9}));
}

TEST(OutputProcessor, EosStopsWithNoStopReasonUnlessIgnored) {
    SamplingParams p = params_with(10);
    p.stop_token_ids = {kEos};  // also a stop id: still reported as EOS
    OutputProcessor out = make(p);
    EXPECT_EQ(out.append_token(0, kEos, nullptr, 0, false), FinishReason::kStop);
    EXPECT_EQ(out.whole(0).stop_reason, "");
    EXPECT_FALSE(out.whole(0).stop_token_id.has_value());

    SamplingParams ignoring = params_with(10);
    ignoring.ignore_eos = true;
    OutputProcessor free_run = make(ignoring);
    EXPECT_EQ(free_run.append_token(0, kEos, nullptr, 0, false), std::nullopt);
}

TEST(OutputProcessor, MaxTokensAndTheContextLimitEndWithLength) {
    OutputProcessor out = make(params_with(2));
    EXPECT_EQ(out.append_token(0, 5, nullptr, 0, false), std::nullopt);
    EXPECT_EQ(out.append_token(0, 6, nullptr, 0, false), FinishReason::kLength);
    OutputProcessor at_limit = make(params_with(100));
    EXPECT_EQ(at_limit.append_token(0, 5, nullptr, 0, /*at_max_model_len=*/true), FinishReason::kLength);
}

TEST(OutputProcessor, TheWholeSampleGathersEveryDelta) {
    SamplingParams p = params_with(10);
    p.logprobs = 0;
    OutputProcessor out = make(p, nullptr, 2);
    SampleLogprobs lp;
    lp.sampled = {5, -0.5f};
    out.append_token(1, 5, &lp, -0.5, false);
    out.append_token(0, 6, nullptr, -1.0, false);
    out.append_token(1, 7, nullptr, -0.25, false);
    out.finish(1, FinishReason::kAbort);
    EXPECT_EQ(out.whole(1).index, 1);
    EXPECT_EQ(out.whole(1).token_ids, std::vector<int32_t>({5, 7}));
    EXPECT_EQ(out.whole(1).logprobs.size(), 1u);
    EXPECT_DOUBLE_EQ(out.whole(1).cumulative_logprob, -0.75);
    EXPECT_EQ(out.whole(1).finish_reason, FinishReason::kAbort);
    EXPECT_EQ(out.whole(0).token_ids, std::vector<int32_t>({6}));
    auto delta = out.take_delta(false, 0);
    ASSERT_TRUE(delta.has_value());
    ASSERT_EQ(delta->samples.size(), 4u);  // in the order they came
    EXPECT_EQ(delta->samples[3].index, 1);
    EXPECT_DOUBLE_EQ(delta->samples[3].cumulative_logprob, -0.75);  // an abort reports the sum so far
}

TEST(OutputProcessor, OnlyTheFirstOutputCarriesThePrompt) {
    OutputProcessor out = make(params_with(10));
    EXPECT_FALSE(out.take_delta(false, 0).has_value());  // nothing new: nothing sent, the prompt still pending
    out.append_token(0, 5, nullptr, 0, false);
    auto first = out.take_delta(false, 3);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->id, 7u);
    EXPECT_EQ(first->prompt_ids, kPrompt);
    EXPECT_EQ(first->num_cached_tokens, 3);
    out.append_token(0, 6, nullptr, 0, false);
    auto second = out.take_delta(false, 3);
    ASSERT_TRUE(second.has_value());
    EXPECT_TRUE(second->prompt_ids.empty());
    EXPECT_EQ(second->num_cached_tokens, 3);
    auto last = out.take_delta(true, 3);  // finished with nothing new: still sent
    ASSERT_TRUE(last.has_value());
    EXPECT_TRUE(last->finished);
    EXPECT_TRUE(last->samples.empty());
    EXPECT_TRUE(last->prompt_ids.empty());

    OutputProcessor failing = make(params_with(10));
    RequestOutput error = failing.error_output("boom");
    EXPECT_EQ(error.prompt_ids, kPrompt);
    EXPECT_TRUE(error.finished);
    EXPECT_EQ(error.error, "boom");
}

TEST(OutputProcessor, PromptLogprobsTravelOnceWhenThePromptIsDone) {
    SamplingParams p = params_with(10);
    p.prompt_logprobs = 1;
    OutputProcessor out = make(p);
    const std::vector<float> logits = {0.f, 1.f, 2.f, 3.f};
    out.add_prompt_logprobs(0, logits);
    EXPECT_FALSE(out.prompt_logprobs_done());
    out.add_prompt_logprobs(0, logits);  // a row recomputed after a preemption: skipped
    out.add_prompt_logprobs(1, logits);
    EXPECT_TRUE(out.prompt_logprobs_done());
    EXPECT_FALSE(out.take_delta(false, 0).has_value());  // not with an empty delta
    out.append_token(0, 5, nullptr, 0, false);
    auto first = out.take_delta(false, 0);
    ASSERT_TRUE(first.has_value());
    ASSERT_EQ(first->prompt_logprobs.size(), 2u);
    EXPECT_EQ(first->prompt_logprobs[0].sampled.token, kPrompt[1]);
    EXPECT_EQ(first->prompt_logprobs[1].sampled.token, kPrompt[2]);
    EXPECT_EQ(first->prompt_logprobs[1].top.size(), 1u);
    out.append_token(0, 6, nullptr, 0, false);
    EXPECT_TRUE(out.take_delta(false, 0)->prompt_logprobs.empty());
    // A best_of final output has them whatever was sent before.
    EXPECT_EQ(out.final_output({out.whole(0)}, 0).prompt_logprobs.size(), 2u);
}

TEST(OutputProcessor, TextStopsAtAStopStringAndReleasesHeldTextAtTheEnd) {
    auto tokenizer = Tokenizer::load(std::string(TACO_SOURCE_DIR) + "/models/demo");
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    auto ids = (*tokenizer)->encode(" the cat sat on the mat", /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.is_ok());
    const std::string expected = (*tokenizer)->decode(*ids);
    ASSERT_EQ(expected, " the cat sat on the mat");

    // Without a stop string the text is the decoded ids, whatever was held back, once the sample ends.
    OutputProcessor plain = make(params_with(int64_t(ids->size())), tokenizer->get());
    for (int32_t id : *ids) plain.append_token(0, id, nullptr, 0, false);
    EXPECT_EQ(plain.whole(0).text, expected);
    EXPECT_EQ(plain.whole(0).finish_reason, FinishReason::kLength);

    SamplingParams p = params_with(100);
    p.stop = {"sat"};
    OutputProcessor stopping = make(p, tokenizer->get());
    std::optional<FinishReason> reason;
    for (size_t i = 0; i < ids->size() && !reason; ++i) reason = stopping.append_token(0, (*ids)[i], nullptr, 0, false);
    EXPECT_EQ(reason, FinishReason::kStop);
    EXPECT_EQ(stopping.whole(0).text, " the cat ");
    EXPECT_EQ(stopping.whole(0).stop_reason, "sat");
}

// The two stages of append_token (async scheduling): push_token decides what the token alone says and queues its
// text; flush_text makes the text, and a stop string found there ends the sample, wins over the token's length
// reason, and drops the tokens queued after it.
TEST(OutputProcessor, TheTextStageFindsStopStringsTheTokenStageCannot) {
    auto tokenizer = Tokenizer::load(std::string(TACO_SOURCE_DIR) + "/models/demo");
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    auto ids = (*tokenizer)->encode(" the cat sat on the mat", /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.is_ok());
    SamplingParams p = params_with(int64_t(ids->size()));
    p.stop = {"sat"};
    OutputProcessor out = make(p, tokenizer->get());
    std::optional<FinishReason> reason;
    for (int32_t id : *ids) reason = out.push_token(0, id, std::nullopt, -0.5, false);
    EXPECT_EQ(reason, FinishReason::kLength);  // the last token reaches max_tokens
    EXPECT_EQ(out.output_ids(0), *ids);        // the next step's sampling sees every token at once
    EXPECT_TRUE(out.whole(0).text.empty());    // no text before the text stage
    EXPECT_EQ(out.flush_text(), std::vector<int64_t>{0});
    EXPECT_EQ(out.whole(0).text, " the cat ");
    EXPECT_EQ(out.whole(0).finish_reason, FinishReason::kStop);
    EXPECT_EQ(out.whole(0).stop_reason, "sat");
    // The tokens after the one that completes "sat" are not output, and the logprob sum is the output's: as the
    // one-stage append_token, which stops feeding there.
    OutputProcessor one_stage = make(p, tokenizer->get());
    std::optional<FinishReason> one_stage_reason;
    for (size_t i = 0; i < ids->size() && !one_stage_reason; ++i)
        one_stage_reason = one_stage.append_token(0, (*ids)[i], nullptr, -0.5, false);
    EXPECT_EQ(one_stage_reason, FinishReason::kStop);
    ASSERT_LT(one_stage.whole(0).token_ids.size(), ids->size());
    EXPECT_EQ(out.whole(0).token_ids, one_stage.whole(0).token_ids);
    EXPECT_EQ(out.whole(0).cumulative_logprob, -0.5 * double(one_stage.whole(0).token_ids.size()));
    // The sample has ended: an abort now records nothing.
    EXPECT_FALSE(out.finish(0, FinishReason::kAbort));
    EXPECT_TRUE(out.flush_text().empty());

    // finish() makes the text of the queued tokens first, then records the end.
    OutputProcessor aborted = make(params_with(100), tokenizer->get());
    aborted.push_token(0, (*ids)[0], std::nullopt, 0, false);
    aborted.push_token(0, (*ids)[1], std::nullopt, 0, false);
    EXPECT_TRUE(aborted.finish(0, FinishReason::kAbort));
    EXPECT_EQ(aborted.whole(0).token_ids, std::vector<int32_t>(ids->begin(), ids->begin() + 2));
    EXPECT_EQ(aborted.whole(0).finish_reason, FinishReason::kAbort);
}

}  // namespace
}  // namespace taco
