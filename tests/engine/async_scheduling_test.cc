// Async scheduling (EngineConfig::async_scheduling): a step's text stage (detokenizing, stop strings, streaming)
// runs in the next step, after that step's forward pass is launched. A sample a stop string ends is then seen one
// step late and its row in that step is dropped. On the CPU, whose steps are batch-invariant, every output must be
// the synchronous engine's, delta for delta, for every way a sample ends; and nothing may be left behind.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace taco {
namespace {

std::unique_ptr<Engine> demo_engine(bool async_scheduling, int64_t num_device_blocks = 0) {
    EngineConfig config = testing_util::demo_config();
    config.num_device_blocks = num_device_blocks;
    config.async_scheduling = async_scheduling;
    return testing_util::create_engine(config);
}

GenerationInput input(std::string prompt, int64_t max_tokens, double temperature = 0, uint64_t seed = 1) {
    GenerationInput in;
    in.prompt = std::move(prompt);
    in.params.max_tokens = max_tokens;
    in.params.temperature = temperature;
    in.params.seed = seed;
    return in;
}

// Requests that end every way there is: stop strings (at once, across tokens, after min_tokens, with the string
// kept), stop tokens, EOS, length, with n and best_of samples, logprobs and prompt logprobs.
std::vector<GenerationInput> workload() {
    std::vector<GenerationInput> w;
    const std::vector<std::string> prompts = {"And the LORD said unto", "Blessed are the", "In the beginning",
                                              "The weather today is",
                                              "<|im_start|>user\nWhat is faith?<|im_end|>\n<|im_start|>assistant\n"};
    for (size_t i = 0; i < prompts.size(); ++i) {
        const std::string& p = prompts[i];
        GenerationInput a = input(p, 40);
        a.params.stop = {" the", ","};
        w.push_back(a);
        GenerationInput b = input(p, 48, 0.8, 7 + i);
        b.params.stop = {"."};
        b.params.include_stop_str_in_output = true;
        w.push_back(b);
        GenerationInput c = input(p, 30, 1.0, 11 + i);
        c.params.n = 3;
        c.params.stop = {" and", "th"};
        c.params.logprobs = 2;
        w.push_back(c);
        GenerationInput d = input(p, 24, 1.0, 3 + i);
        d.params.n = 2;
        d.params.best_of = 3;
        d.params.stop = {"LORD", "e s"};
        w.push_back(d);
        GenerationInput e = input(p, 32);
        e.params.min_tokens = 5;
        e.params.stop = {" "};
        w.push_back(e);
        GenerationInput f = input(p, 20, 1.0, 5 + i);
        f.params.ignore_eos = true;
        f.params.stop_token_ids = {13, 11};  // "." and "," of the demo vocabulary, or whatever they are: stop ids
        w.push_back(f);
        GenerationInput g = input(p, 6);
        g.params.prompt_logprobs = 1;
        g.params.stop = {"e"};
        w.push_back(g);
        GenerationInput h = input(p, 1);
        h.params.stop = {"a"};
        w.push_back(h);
    }
    return w;
}

void expect_same_sample(const SampleOutput& sync, const SampleOutput& async, const std::string& where) {
    EXPECT_EQ(sync.index, async.index) << where;
    EXPECT_EQ(sync.token_ids, async.token_ids) << where;
    EXPECT_EQ(sync.text, async.text) << where;
    EXPECT_EQ(sync.finish_reason, async.finish_reason) << where;
    EXPECT_EQ(sync.stop_reason, async.stop_reason) << where;
    EXPECT_EQ(sync.stop_token_id, async.stop_token_id) << where;
    EXPECT_EQ(sync.cumulative_logprob, async.cumulative_logprob) << where;
    ASSERT_EQ(sync.logprobs.size(), async.logprobs.size()) << where;
    for (size_t t = 0; t < sync.logprobs.size(); ++t) {
        EXPECT_EQ(sync.logprobs[t].sampled.token, async.logprobs[t].sampled.token) << where << " token " << t;
        EXPECT_EQ(sync.logprobs[t].sampled.logprob, async.logprobs[t].sampled.logprob) << where << " token " << t;
        ASSERT_EQ(sync.logprobs[t].top.size(), async.logprobs[t].top.size()) << where << " token " << t;
        for (size_t k = 0; k < sync.logprobs[t].top.size(); ++k)
            EXPECT_EQ(sync.logprobs[t].top[k].token, async.logprobs[t].top[k].token) << where << " token " << t;
    }
}

void expect_same_output(const RequestOutput& sync, const RequestOutput& async, const std::string& where) {
    EXPECT_EQ(sync.finished, async.finished) << where;
    EXPECT_EQ(sync.error, async.error) << where;
    EXPECT_EQ(sync.prompt_ids, async.prompt_ids) << where;
    EXPECT_EQ(sync.prompt_logprobs.size(), async.prompt_logprobs.size()) << where;
    ASSERT_EQ(sync.samples.size(), async.samples.size()) << where;
    for (size_t s = 0; s < sync.samples.size(); ++s)
        expect_same_sample(sync.samples[s], async.samples[s], where + " sample " + std::to_string(s));
}

std::vector<RequestOutput> generate(Engine& engine, const std::vector<GenerationInput>& inputs) {
    std::vector<RequestOutput> out;
    for (auto& result : engine.generate(inputs)) {
        EXPECT_TRUE(result.is_ok()) << result.status().message();
        out.push_back(result.is_ok() ? std::move(result).value() : RequestOutput{});
    }
    return out;
}

// Every stream's deltas, one request after another (each request alone, so its steps are the same in both modes).
std::vector<std::vector<RequestOutput>> stream_each(Engine& engine, const std::vector<GenerationInput>& inputs) {
    std::vector<std::vector<RequestOutput>> all;
    for (const GenerationInput& in : inputs) {
        auto stream = engine.submit(in);
        EXPECT_TRUE(stream.is_ok()) << stream.status().message();
        std::vector<RequestOutput> deltas;
        if (stream.is_ok())
            while (auto out = (*stream)->next()) deltas.push_back(std::move(*out));
        all.push_back(std::move(deltas));
    }
    return all;
}

TEST(AsyncScheduling, BatchedOutputsAreTheSynchronousEngines) {
    auto sync = demo_engine(false), async = demo_engine(true);
    ASSERT_NE(sync, nullptr);
    ASSERT_NE(async, nullptr);
    const std::vector<GenerationInput> inputs = workload();
    const std::vector<RequestOutput> expected = generate(*sync, inputs), got = generate(*async, inputs);
    ASSERT_EQ(expected.size(), got.size());
    int64_t stopped_by_string = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        expect_same_output(expected[i], got[i], "request " + std::to_string(i));
        for (const SampleOutput& s : expected[i].samples) stopped_by_string += !s.stop_reason.empty();
    }
    // The workload is only a test of late stops if stop strings do end samples.
    EXPECT_GE(stopped_by_string, 10);
    // Nothing is left behind: every request finished, every block back (a late stop's row was computed and freed).
    const EngineStats a = async->stats(), s = sync->stats();
    EXPECT_EQ(a.num_running, 0);
    EXPECT_EQ(a.num_waiting, 0);
    EXPECT_EQ(a.num_requests_finished, s.num_requests_finished);
    EXPECT_EQ(a.generation_tokens_total, s.generation_tokens_total);
    EXPECT_EQ(async->cache_info().num_device_blocks, sync->cache_info().num_device_blocks);
    EXPECT_EQ(a.kv_cache_usage, 0.0);
    // And the late stops did happen: the async engine computed the rows it then dropped.
    EXPECT_GT(a.iteration_tokens_sum, s.iteration_tokens_sum);
}

TEST(AsyncScheduling, StreamedDeltasAreTheSynchronousEngines) {
    auto sync = demo_engine(false), async = demo_engine(true);
    ASSERT_NE(sync, nullptr);
    ASSERT_NE(async, nullptr);
    std::vector<GenerationInput> inputs = workload();
    inputs.resize(16);
    const auto expected = stream_each(*sync, inputs), got = stream_each(*async, inputs);
    ASSERT_EQ(expected.size(), got.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(expected[i].size(), got[i].size()) << "request " << i << ": a different number of deltas";
        for (size_t d = 0; d < expected[i].size(); ++d)
            expect_same_output(expected[i][d], got[i][d],
                               "request " + std::to_string(i) + " delta " + std::to_string(d));
    }
}

TEST(AsyncScheduling, PreemptionsUnderKvPressureKeepTheOutputs) {
    // 40 blocks of 16 tokens for 40 requests: the scheduler preempts (recomputes) while samples stop late.
    auto sync = demo_engine(false, 40), async = demo_engine(true, 40);
    ASSERT_NE(sync, nullptr);
    ASSERT_NE(async, nullptr);
    const std::vector<GenerationInput> inputs = workload();
    const std::vector<RequestOutput> expected = generate(*sync, inputs), got = generate(*async, inputs);
    ASSERT_EQ(expected.size(), got.size());
    for (size_t i = 0; i < expected.size(); ++i)
        expect_same_output(expected[i], got[i], "request " + std::to_string(i));
    EXPECT_GT(async->stats().num_preemptions, 0);
    EXPECT_EQ(async->stats().generation_tokens_total, sync->stats().generation_tokens_total);
    EXPECT_EQ(async->stats().kv_cache_usage, 0.0);
}

TEST(AsyncScheduling, AnAbortComesAfterTheTextOfTheTokensBeforeIt) {
    auto engine = demo_engine(true);
    ASSERT_NE(engine, nullptr);
    GenerationInput in = input("And the LORD said unto", 400);
    in.params.ignore_eos = true;
    auto stream = engine->submit(in);
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    std::vector<int32_t> tokens;
    std::string text;
    std::optional<FinishReason> reason;
    int64_t deltas = 0;
    while (auto out = (*stream)->next()) {
        if (++deltas == 3) engine->abort((*stream)->id());
        for (const SampleOutput& s : out->samples) {
            tokens.insert(tokens.end(), s.token_ids.begin(), s.token_ids.end());
            text += s.text;
            if (s.finish_reason) reason = s.finish_reason;
        }
    }
    EXPECT_EQ(reason, FinishReason::kAbort);
    EXPECT_LT(tokens.size(), 400u);
    // The text streamed is the text of the tokens streamed (the abort dropped only what a stop string might hold).
    auto again = demo_engine(false);
    ASSERT_NE(again, nullptr);
    GenerationInput prefix = in;
    prefix.params.max_tokens = int64_t(tokens.size());
    const auto whole = generate(*again, {prefix});
    ASSERT_EQ(whole.size(), 1u);
    ASSERT_EQ(whole[0].samples.size(), 1u);
    EXPECT_EQ(whole[0].samples[0].token_ids, tokens);
    EXPECT_EQ(whole[0].samples[0].text.substr(0, text.size()), text);
    EXPECT_EQ(engine->stats().kv_cache_usage, 0.0);
}

TEST(AsyncScheduling, TheLastOutputsReachTheirStreamsWhenTheEngineGoesIdle) {
    // One request alone: its final output waits for a text stage that no further step will run.
    auto engine = demo_engine(true);
    ASSERT_NE(engine, nullptr);
    for (int64_t max_tokens : {1, 2, 7}) {
        GenerationInput in = input("Blessed are the", max_tokens);
        in.params.ignore_eos = true;
        const auto out = generate(*engine, {in});
        ASSERT_EQ(out.size(), 1u);
        ASSERT_EQ(out[0].samples.size(), 1u);
        EXPECT_EQ(int64_t(out[0].samples[0].token_ids.size()), max_tokens);
        EXPECT_EQ(out[0].samples[0].finish_reason, FinishReason::kLength);
    }
}

}  // namespace
}  // namespace taco
