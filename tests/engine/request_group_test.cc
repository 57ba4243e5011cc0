// RequestGroup alone: the fan-out into samples (forks, seeds) and what its stream gets (every delta for n,
// the best n of best_of at the end).
#include "engine/request_group.h"

#include <set>

#include <gtest/gtest.h>

namespace taco {
namespace {

const std::vector<int32_t> kPrompt = {4, 5, 6};

SamplingParams sampled(int64_t n, std::optional<int64_t> best_of = std::nullopt) {
    SamplingParams p;
    p.temperature = 1.0;
    p.n = n;
    p.best_of = best_of;
    p.max_tokens = 10;
    return p;
}

RequestGroup make_group(const SamplingParams& p, RequestId id = 3, uint64_t engine_seed = 0) {
    return RequestGroup(id, kPrompt, p, nullptr, {}, engine_seed);
}

// Forks `group` from its own sample-0 request; child ids count up from 100.
void start_and_fork(RequestGroup& group) {
    group.start();
    std::unique_ptr<Request> parent = group.make_request(0);
    RequestId next = 100;
    group.fork(*parent, [&] { return next++; });
}

TEST(RequestGroup, Sample0IsTheGroupsOwnRequest) {
    RequestGroup group = make_group(sampled(1));
    std::unique_ptr<Request> request = group.make_request(9);
    EXPECT_EQ(request->id, 3u);
    EXPECT_EQ(request->arrival_order, 9u);
    EXPECT_EQ(request->token_ids, kPrompt);
    EXPECT_EQ(request->num_prompt_tokens, 3);
    EXPECT_EQ(request->max_total_tokens, 13);
    EXPECT_FALSE(request->skip_prefix_cache);
    SamplingParams scoring = sampled(1);
    scoring.prompt_logprobs = 0;
    EXPECT_TRUE(make_group(scoring).make_request(0)->skip_prefix_cache);
    SampleState& s = group.start();
    EXPECT_EQ(s.request_id, 3u);
    EXPECT_EQ(s.index, 0);
    EXPECT_TRUE(group.streams_deltas());
}

TEST(RequestGroup, ForksCopyTheParentUnderNewIdsInSampleOrder) {
    RequestGroup group = make_group(sampled(3));
    group.start();
    std::unique_ptr<Request> parent = group.make_request(0);
    parent->num_computed_tokens = 3;
    RequestId next = 100;
    auto children = group.fork(*parent, [&] { return next++; });
    ASSERT_EQ(children.size(), 2u);
    EXPECT_TRUE(group.forked());
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(children[i]->id, 100 + i);
        EXPECT_EQ(children[i]->token_ids, kPrompt);
        EXPECT_EQ(children[i]->num_computed_tokens, 3);
        EXPECT_EQ(group.sample(i + 1).request_id, 100 + i);
        EXPECT_EQ(group.sample(i + 1).index, int64_t(i + 1));
    }
}

TEST(RequestGroup, ARequestSeedGivesSampleITheSeedPlusI) {
    SamplingParams p = sampled(3);
    p.seed = 40;
    for (uint64_t engine_seed : {0u, 5u}) {
        RequestGroup group = make_group(p, 3, engine_seed);
        start_and_fork(group);
        for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(group.sample(size_t(i)).seed, 40 + uint64_t(i)) << "sample " << i;
    }
}

TEST(RequestGroup, UnseededSamplesGetTheirOwnReproducibleSeeds) {
    RequestGroup a = make_group(sampled(3), 3, /*engine_seed=*/7);
    RequestGroup b = make_group(sampled(3), 3, /*engine_seed=*/7);
    RequestGroup other_id = make_group(sampled(3), 4, /*engine_seed=*/7);
    RequestGroup other_engine = make_group(sampled(3), 3, /*engine_seed=*/8);
    for (RequestGroup* g : {&a, &b, &other_id, &other_engine}) start_and_fork(*g);
    std::set<uint64_t> seeds;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(a.sample(i).seed, b.sample(i).seed) << "sample " << i;
        for (RequestGroup* g : {&a, &other_id, &other_engine}) seeds.insert(g->sample(i).seed);
    }
    EXPECT_EQ(seeds.size(), 9u) << "samples, group ids and engine seeds each change the seed";
}

TEST(RequestGroup, MinTokensSuppressStopTokenIdsAndEosUnlessIgnored) {
    SamplingParams p = sampled(1);
    p.stop_token_ids = {9, 11};
    RequestGroup group(3, kPrompt, p, nullptr, /*eos_token_ids=*/{2, 5}, 0);
    EXPECT_EQ(group.min_tokens_suppressed_ids(), std::vector<int32_t>({9, 11, 2, 5}));
    p.ignore_eos = true;
    RequestGroup ignoring(3, kPrompt, p, nullptr, {2, 5}, 0);
    EXPECT_EQ(ignoring.min_tokens_suppressed_ids(), std::vector<int32_t>({9, 11}));
}

TEST(RequestGroup, NSamplesStreamEveryDelta) {
    RequestGroup group = make_group(sampled(2));
    start_and_fork(group);
    group.output().append_token(1, 8, nullptr, 0, false);
    group.output().append_token(0, 9, nullptr, 0, false);
    auto first = group.take_output();
    ASSERT_TRUE(first.has_value());
    EXPECT_FALSE(first->finished);
    ASSERT_EQ(first->samples.size(), 2u);
    EXPECT_EQ(first->samples[0].index, 1);
    EXPECT_FALSE(group.take_output().has_value());  // nothing new
    for (SampleState& s : group.samples()) {
        group.output().finish(s.index, FinishReason::kAbort);
        group.mark_finished(s);
    }
    EXPECT_TRUE(group.done());
    auto last = group.take_output();
    ASSERT_TRUE(last.has_value());
    EXPECT_TRUE(last->finished);
    EXPECT_EQ(last->samples.size(), 2u);
}

TEST(RequestGroup, BestOfSendsOnlyTheNMostLikelySamplesAtTheEnd) {
    RequestGroup group = make_group(sampled(2, 4));
    EXPECT_EQ(group.num_samples(), 4);
    EXPECT_FALSE(group.streams_deltas());
    start_and_fork(group);
    // Cumulative logprobs -3, -1, -2, -1: samples 1 and 3 tie for first, 1 came first.
    const double logprobs[] = {-3, -1, -2, -1};
    for (int64_t i = 0; i < 4; ++i) {
        group.output().append_token(i, int32_t(20 + i), nullptr, logprobs[i], false);
        EXPECT_FALSE(group.take_output().has_value()) << "best_of streams nothing";
    }
    for (int64_t i = 0; i < 4; ++i) {
        group.output().finish(i, FinishReason::kAbort);
        group.mark_finished(group.sample(size_t(i)));
        EXPECT_EQ(group.take_output().has_value(), i == 3);
    }
    std::vector<SampleOutput> best = group.best_samples();
    ASSERT_EQ(best.size(), 2u);
    EXPECT_EQ(best[0].index, 0);
    EXPECT_EQ(best[0].token_ids, std::vector<int32_t>({21}));
    EXPECT_EQ(best[1].index, 1);
    EXPECT_EQ(best[1].token_ids, std::vector<int32_t>({23}));
}

TEST(RequestGroup, BestOfFinalOutputCarriesThePromptAndTheBestSamples) {
    RequestGroup group = make_group(sampled(1, 2));
    start_and_fork(group);
    group.output().append_token(0, 30, nullptr, -2, false);
    group.output().append_token(1, 31, nullptr, -0.5, false);
    EXPECT_FALSE(group.take_output().has_value());
    group.end_all();  // as an abort does, before the samples report their end
    auto final_out = group.take_output();
    ASSERT_TRUE(final_out.has_value());
    EXPECT_TRUE(final_out->finished);
    EXPECT_EQ(final_out->prompt_ids, kPrompt);
    ASSERT_EQ(final_out->samples.size(), 1u);
    EXPECT_EQ(final_out->samples[0].token_ids, std::vector<int32_t>({31}));
}

}  // namespace
}  // namespace taco

namespace taco {
namespace {

TEST(RequestGroup, BadWordBansTheLastTokenOnceTheOutputEndsWithTheRest) {
    RequestGroup group = make_group(sampled(1));
    group.set_bad_word_ids({{7}, {1, 2, 3}});
    std::vector<int32_t> bans;
    group.bad_word_bans({}, bans);
    EXPECT_EQ(bans, (std::vector<int32_t>{7}));  // a one-token word is banned from the start
    bans.clear();
    group.bad_word_bans(std::vector<int32_t>{9, 1, 2}, bans);
    EXPECT_EQ(bans, (std::vector<int32_t>{7, 3}));
    bans.clear();
    group.bad_word_bans(std::vector<int32_t>{1, 2, 9}, bans);  // the prefix must end the output
    EXPECT_EQ(bans, (std::vector<int32_t>{7}));
    bans.clear();
    group.bad_word_bans(std::vector<int32_t>{2}, bans);  // too short for the prefix
    EXPECT_EQ(bans, (std::vector<int32_t>{7}));
}

TEST(RequestGroup, AllowedTokenIdsSuppressEveryOtherTokenOfTheVocabulary) {
    SamplingParams p = sampled(1);
    p.allowed_token_ids = {2, 5};
    RequestGroup group(3, kPrompt, p, nullptr, {}, 0, /*vocab_size=*/7);
    EXPECT_EQ(group.disallowed_ids(), (std::vector<int32_t>{0, 1, 3, 4, 6}));
    EXPECT_TRUE(make_group(sampled(1)).disallowed_ids().empty());
}

}  // namespace
}  // namespace taco
