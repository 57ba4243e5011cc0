// use_beam_search (vLLM's beam search): the server's beams against a reference search written here from the
// engine's plain logprobs (one max_tokens=1 request per beam and step, as vLLM's algorithm reads them), the length
// penalty changing the winner, the 400s of the combinations that are refused, and the search state on numbers given
// by hand. Token-id prompts on the test llama (no tokenizer, EOS 2); text, stop strings and chat on the demo model.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "engine/beam_search.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

const char* kLlama = "tests/data/models/llama";
const char* kDemo = "models/demo";
constexpr int32_t kLlamaEos = 2;

void expect_400(const HttpResult& r, const std::string& param) {
    EXPECT_EQ(r.status, 400) << r.body;
    if (r.status != 400) return;
    EXPECT_EQ(r.json()["error"]["param"], param) << r.body;
}

struct RefBeam {
    std::vector<int32_t> tokens;  // generated, an ending EOS / stop token included
    double cum = 0;
    std::string finish = "length";
};

// The next-token logprobs of prompt + tokens: the top 20 of a plain greedy request, highest first (ties: lower id).
std::vector<std::pair<int32_t, double>> top_logprobs(int port, const std::vector<int32_t>& ids) {
    const json request = {{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 20}};
    const HttpResult r = post(port, "/v1/completions", request);
    EXPECT_EQ(r.status, 200) << r.body;
    const json response = r.json();
    std::vector<std::pair<int32_t, double>> top;
    for (const auto& [name, logprob] : response["choices"][0]["logprobs"]["top_logprobs"][0].items())
        top.emplace_back(std::stoi(name.substr(std::string("token_id:").size())), logprob.get<double>());
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    return top;
}

// vLLM's beam search (serving.py beam_search + beam_search.py), written plainly: candidates are each beam's top
// 2k tokens; an ending token (EOS, or one of `stop_ids`) completes its beam; the k best of the rest by cumulative
// logprob go on; at the end all are ranked by cum / (prompt + tokens, less an ending EOS) ^ length_penalty.
// EOS / stop tokens are kept in the tokens (include_stop_str_in_output).
std::vector<RefBeam> reference_search(int port, const std::vector<int32_t>& prompt, int k, int max_tokens,
                                      double length_penalty, const std::vector<int32_t>& stop_ids = {}) {
    std::vector<RefBeam> beams(1), completed;
    for (int step = 0; step < max_tokens && !beams.empty(); ++step) {
        struct Candidate {
            double cum;
            size_t beam;
            int32_t token;
        };
        std::vector<Candidate> candidates;
        for (size_t b = 0; b < beams.size(); ++b) {
            std::vector<int32_t> ids = prompt;
            ids.insert(ids.end(), beams[b].tokens.begin(), beams[b].tokens.end());
            const auto top = top_logprobs(port, ids);
            for (size_t r = 0; r < size_t(2 * k) && r < top.size(); ++r) {
                const auto [token, logprob] = top[r];
                const bool ends = token == kLlamaEos || std::count(stop_ids.begin(), stop_ids.end(), token) > 0;
                if (ends) {
                    RefBeam done = beams[b];
                    done.tokens.push_back(token);
                    done.cum += logprob;
                    done.finish = "stop";
                    completed.push_back(done);
                } else {
                    candidates.push_back({beams[b].cum + logprob, b, token});
                }
            }
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& a, const Candidate& b) { return a.cum > b.cum; });
        std::vector<RefBeam> next;
        for (size_t i = 0; i < candidates.size() && int(next.size()) < k; ++i) {
            RefBeam beam = beams[candidates[i].beam];
            beam.tokens.push_back(candidates[i].token);
            beam.cum = candidates[i].cum;
            next.push_back(beam);
        }
        beams = next;
    }
    completed.insert(completed.end(), beams.begin(), beams.end());
    auto score = [&](const RefBeam& beam) {
        double len = double(prompt.size() + beam.tokens.size());
        if (!beam.tokens.empty() && beam.tokens.back() == kLlamaEos) len -= 1;
        return beam.cum / std::pow(len, length_penalty);
    };
    std::stable_sort(completed.begin(), completed.end(),
                     [&](const RefBeam& a, const RefBeam& b) { return score(a) > score(b); });
    if (int(completed.size()) > k) completed.resize(size_t(k));
    return completed;
}

json beam_request(const std::vector<int32_t>& prompt, int k, int max_tokens, double length_penalty) {
    return {{"prompt", prompt}, {"max_tokens", max_tokens},         {"use_beam_search", true},
            {"n", k},           {"length_penalty", length_penalty}, {"include_stop_str_in_output", true},
            {"logprobs", 0},    {"return_token_ids", true}};
}

// The server's choices equal the reference's beams: same tokens in the same order, cumulative logprob (the sum of
// the token logprobs), finish reason and stop reason; usage counts the prompt once and every choice's tokens.
void expect_same_beams(const json& response, const std::vector<RefBeam>& expected, size_t prompt_len) {
    const json& choices = response["choices"];
    ASSERT_EQ(choices.size(), expected.size()) << response.dump();
    int64_t num_tokens = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        const json& c = choices[i];
        EXPECT_EQ(c["index"], i);
        EXPECT_EQ(c["token_ids"].get<std::vector<int32_t>>(), expected[i].tokens) << "choice " << i;
        double cum = 0;
        for (const json& lp : c["logprobs"]["token_logprobs"]) cum += lp.get<double>();
        EXPECT_NEAR(cum, expected[i].cum, 1e-9) << "choice " << i;
        EXPECT_EQ(c["finish_reason"], expected[i].finish) << "choice " << i;
        if (expected[i].finish == "stop")
            EXPECT_EQ(c["stop_reason"], expected[i].tokens.back()) << "choice " << i;
        else
            EXPECT_TRUE(c["stop_reason"].is_null()) << "choice " << i;
        num_tokens += int64_t(expected[i].tokens.size());
    }
    EXPECT_EQ(response["usage"]["prompt_tokens"], prompt_len);
    EXPECT_EQ(response["usage"]["completion_tokens"], num_tokens);
}

TEST(BeamSearch, ServerBeamsEqualAReferenceSearchOverTheEnginesLogprobs) {
    TestServer s(kLlama);
    const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {1, 57, 300, 4, 99, 12, 7}, {5}};
    for (const auto& prompt : prompts) {
        for (int k : {1, 2, 4}) {
            SCOPED_TRACE(::testing::Message() << "prompt of " << prompt.size() << ", beam width " << k);
            const auto expected = reference_search(s.port, prompt, k, 4, 1.0);
            const HttpResult r = post(s.port, "/v1/completions", beam_request(prompt, k, 4, 1.0));
            ASSERT_EQ(r.status, 200) << r.body;
            expect_same_beams(r.json(), expected, prompt.size());
        }
    }
    // Several prompts in one request: prompt i's beams are choices i * n .. i * n + n - 1, usage sums them.
    json request = beam_request(prompts[0], 2, 3, 1.0);
    request["prompt"] = {prompts[0], prompts[1]};
    const HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json response = r.json();
    ASSERT_EQ(response["choices"].size(), 4u);
    int64_t num_tokens = 0;
    for (size_t p = 0; p < 2; ++p) {
        const auto expected = reference_search(s.port, prompts[p], 2, 3, 1.0);
        for (size_t j = 0; j < 2; ++j) {
            const json& c = response["choices"][p * 2 + j];
            EXPECT_EQ(c["index"], p * 2 + j);
            EXPECT_EQ(c["token_ids"].get<std::vector<int32_t>>(), expected[j].tokens) << p << " " << j;
            num_tokens += int64_t(c["token_ids"].size());
        }
    }
    EXPECT_EQ(response["usage"]["prompt_tokens"], prompts[0].size() + prompts[1].size());
    EXPECT_EQ(response["usage"]["completion_tokens"], num_tokens);
}

TEST(BeamSearch, ClientThatLeavesCancelsTheSearch) {
    TestServer s(kDemo);
    {
        HttpConnection connection(s.port);
        const json body = {{"prompt", "Once upon a time"},
                           {"max_tokens", 500},
                           {"ignore_eos", true},
                           {"use_beam_search", true},
                           {"n", 4}};
        connection.send("POST", "/v1/completions", body.dump());
        for (int i = 0; i < 400 && s.engine->stats().generation_tokens_total < 8; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        EXPECT_GE(s.engine->stats().generation_tokens_total, 8);
    }  // the socket closes long before 500 steps of 4 probes
    // Quiescent: no reply in flight, nothing scheduled and the token count still over 300 ms (a step under way when
    // the client left, or the gap between two of the search's steps, must not be taken for the end).
    int64_t generated = -1;
    for (int i = 0; i < 100 && generated < 0; ++i) {
        const int64_t before = s.engine->stats().generation_tokens_total;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const bool idle =
            s.server->num_in_flight() == 0 && s.engine->stats().num_running == 0 && s.engine->stats().num_waiting == 0;
        if (idle && s.engine->stats().generation_tokens_total == before) generated = before;
    }
    ASSERT_GE(generated, 0) << "the search went on after its client left";
    EXPECT_LT(generated, 4 * 500);  // cancelled, not run to its end
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(s.engine->stats().generation_tokens_total, generated);  // no probe after the cancel
    // The server goes on serving beam searches.
    const json again = {{"prompt", "Hello"}, {"max_tokens", 3}, {"use_beam_search", true}, {"n", 2}};
    EXPECT_EQ(post(s.port, "/v1/completions", again).status, 200);
}

TEST(BeamSearch, LengthPenaltyChangesTheWinner) {
    TestServer s(kLlama);
    const std::vector<int32_t> prompt = {1, 17, 33};
    // The second most likely first token ends a beam after one token (a stop token id): a short completed beam
    // with a good cumulative logprob, against beams of 5 tokens. Without a penalty (0) the short one wins; a
    // strong one (4) divides the long beams' lower sums by a much larger length.
    const int32_t stop = top_logprobs(s.port, prompt).at(1).first;
    ASSERT_NE(stop, kLlamaEos);
    const auto unpenalised = reference_search(s.port, prompt, 3, 5, 0.0, {stop});
    const auto penalised = reference_search(s.port, prompt, 3, 5, 4.0, {stop});
    ASSERT_EQ(unpenalised.front().tokens, std::vector<int32_t>{stop});
    ASSERT_NE(penalised.front().tokens, unpenalised.front().tokens);
    for (const auto& [penalty, expected] : {std::pair{0.0, unpenalised}, std::pair{4.0, penalised}}) {
        SCOPED_TRACE(::testing::Message() << "length_penalty " << penalty);
        json request = beam_request(prompt, 3, 5, penalty);
        request["stop_token_ids"] = {stop};
        const HttpResult r = post(s.port, "/v1/completions", request);
        ASSERT_EQ(r.status, 200) << r.body;
        expect_same_beams(r.json(), expected, prompt.size());
    }
}

TEST(BeamSearch, EosLeftOutOfTheTokensUnlessIncludedAndIgnoreEosKeepsBeamsGoing) {
    TestServer s(kLlama);
    // A beam that ended at EOS shows it in its tokens only with include_stop_str_in_output; with ignore_eos every
    // beam runs max_tokens.
    const std::vector<int32_t> prompt = {1, 2, 3};
    json request = beam_request(prompt, 4, 6, 1.0);
    request["include_stop_str_in_output"] = false;
    HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    json response = r.json();
    for (const json& c : response["choices"]) {
        const auto ids = c["token_ids"].get<std::vector<int32_t>>();
        EXPECT_EQ(std::count(ids.begin(), ids.end(), kLlamaEos), 0) << c.dump();
        if (c["finish_reason"] == "length") {
            EXPECT_EQ(ids.size(), 6u);
        } else {
            EXPECT_EQ(c["stop_reason"], kLlamaEos);
        }
    }
    request["ignore_eos"] = true;
    r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    response = r.json();
    for (const json& c : response["choices"]) {
        EXPECT_EQ(c["finish_reason"], "length");
        EXPECT_EQ(c["token_ids"].size(), 6u);
    }
}

TEST(BeamSearch, StopStringsEndBeamsAndTextAndChatWork) {
    TestServer s(kDemo);
    json request = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"use_beam_search", true}, {"n", 3}};
    HttpResult r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    const json plain = r.json();
    ASSERT_EQ(plain["choices"].size(), 3u);
    const std::string best = plain["choices"][0]["text"];
    ASSERT_GE(best.size(), 4u) << plain.dump();
    // A stop string from inside the best beam's text: that beam's prefix ends there (it was among the kept beams at
    // every step), and every choice that a stop string ended is cut before it.
    const std::string stop = best.substr(best.size() / 2, 2);
    request["stop"] = {stop};
    r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    int num_stopped = 0;
    json response = r.json();
    for (const json& c : response["choices"]) {
        const std::string text = c["text"];
        EXPECT_EQ(text.find(stop), std::string::npos) << text;
        if (c["finish_reason"] == "stop" && c["stop_reason"] == stop) num_stopped++;
    }
    request["include_stop_str_in_output"] = true;
    EXPECT_GE(num_stopped, 1) << response.dump();
    r = post(s.port, "/v1/completions", request);
    ASSERT_EQ(r.status, 200) << r.body;
    response = r.json();
    for (const json& c : response["choices"]) {
        const std::string text = c["text"];
        if (c["stop_reason"] == stop) {
            ASSERT_GE(text.size(), stop.size());
            EXPECT_EQ(text.substr(text.size() - stop.size()), stop) << text;
        }
    }

    // Chat, whole and streamed (vLLM streams beam search on chat: the role, then each choice whole at the end).
    json chat = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}},
                 {"max_tokens", 6},
                 {"use_beam_search", true},
                 {"n", 2},
                 {"length_penalty", 0.5}};
    r = post(s.port, "/v1/chat/completions", chat);
    ASSERT_EQ(r.status, 200) << r.body;
    const json whole = r.json();
    ASSERT_EQ(whole["choices"].size(), 2u);
    chat["stream"] = true;
    r = post(s.port, "/v1/chat/completions", chat);
    ASSERT_EQ(r.status, 200) << r.body;
    bool done = false;
    std::map<int, std::string> streamed;
    std::map<int, std::string> finish;
    for (const json& event : sse_events(r.body, &done)) {
        for (const json& c : event["choices"]) {
            const int index = c["index"];
            if (c["delta"].contains("content") && c["delta"]["content"].is_string())
                streamed[index] += c["delta"]["content"].get<std::string>();
            if (!c["finish_reason"].is_null()) finish[index] = c["finish_reason"];
        }
    }
    EXPECT_TRUE(done);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(streamed[i], whole["choices"][i]["message"]["content"].get<std::string>()) << i;
        EXPECT_EQ(finish[i], whole["choices"][i]["finish_reason"].get<std::string>()) << i;
    }
}

TEST(BeamSearch, RefusedCombinationsAre400sNamingTheField) {
    TestServer s(kLlama);
    const json base = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}, {"use_beam_search", true}, {"n", 2}};
    auto with = [&](const char* key, json value) {
        json request = base;
        request[key] = std::move(value);
        return request;
    };
    expect_400(post(s.port, "/v1/completions", with("stream", true)), "stream");  // as vLLM
    expect_400(post(s.port, "/v1/completions", with("n", BeamSearchParams::kMaxBeamWidth + 1)), "n");
    expect_400(post(s.port, "/v1/completions", with("best_of", 3)), "best_of");
    expect_400(post(s.port, "/v1/completions", with("top_p", 0.5)), "top_p");
    expect_400(post(s.port, "/v1/completions", with("logit_bias", {{"5", 3}})), "logit_bias");
    expect_400(post(s.port, "/v1/completions", with("early_stopping", true)), "early_stopping");
    expect_400(post(s.port, "/v1/completions", with("prompt_logprobs", 1)), "prompt_logprobs");
    expect_400(post(s.port, "/v1/completions", with("use_beam_search", "yes")), "use_beam_search");
    expect_400(post(s.port, "/v1/completions", with("max_tokens", 1000)), "max_tokens");  // past max_model_len
    json plain = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}, {"length_penalty", 0.5}};
    expect_400(post(s.port, "/v1/completions", plain), "length_penalty");  // nothing would apply it
    // Neutral values pass: what clients send for "not used".
    json neutral = with("top_p", 1.0);
    neutral["early_stopping"] = false;
    neutral["best_of"] = 2;
    neutral["temperature"] = 0.7;
    neutral["seed"] = 3;
    EXPECT_EQ(post(s.port, "/v1/completions", neutral).status, 200);
    plain["length_penalty"] = 1.0;
    EXPECT_EQ(post(s.port, "/v1/completions", plain).status, 200);
}

// The search state alone, on logprobs given by hand: EOS candidates complete without taking a beam's place, and
// the final ranking divides by the length to the power length_penalty (prompt included).
TEST(BeamSearch, StateCompletesEosCandidatesAndRanksByPenalisedScore) {
    EXPECT_DOUBLE_EQ(beam_search_score(10, -5.0, 1.0), -0.5);
    EXPECT_DOUBLE_EQ(beam_search_score(10, -5.0, 0.0), -5.0);
    EXPECT_DOUBLE_EQ(beam_search_score(10, -5.0, 2.0), -0.05);
    auto step_of = [](std::vector<TokenLogprob> top) {
        SampleLogprobs lp;
        lp.sampled = top.front();
        lp.top = std::move(top);
        return lp;
    };
    for (double penalty : {0.0, 3.0}) {
        BeamSearchParams params;
        params.beam_width = 2;
        params.max_tokens = 2;
        params.length_penalty = penalty;
        BeamSearchState state({7, 8}, params, /*eos=*/0, nullptr);
        // Step 1: EOS second (-1.0) completes [] at once; 5 and 6 go on.
        const SampleLogprobs first = step_of({{5, -0.5f}, {0, -1.0f}, {6, -1.5f}, {9, -4.0f}});
        state.advance(std::span(&first, 1));
        ASSERT_EQ(state.live().size(), 2u);
        EXPECT_EQ(state.live()[0].token_ids, std::vector<int32_t>{5});
        EXPECT_EQ(state.live()[1].token_ids, std::vector<int32_t>{6});
        const SampleLogprobs second[] = {step_of({{3, -1.0f}, {4, -2.0f}, {1, -2.5f}, {0, -3.0f}}),
                                         step_of({{3, -0.25f}, {4, -3.0f}, {1, -3.5f}, {2, -4.0f}})};
        state.advance(second);
        EXPECT_TRUE(state.done());
        const auto best = state.best();
        ASSERT_EQ(best.size(), 2u);
        if (penalty == 0.0) {  // by cum: [] at EOS (-1.0) beats [5, 3] (-1.5)
            EXPECT_TRUE(best[0].token_ids.empty());
            EXPECT_EQ(best[0].finish_reason, FinishReason::kStop);
            EXPECT_EQ(best[0].stop_token_id, 0);
            EXPECT_EQ(best[1].token_ids, (std::vector<int32_t>{5, 3}));
        } else {  // -1.0 / 2^3 = -0.125 against -1.5 / 4^3 and -1.75 / 4^3
            EXPECT_EQ(best[0].token_ids, (std::vector<int32_t>{5, 3}));
            EXPECT_EQ(best[1].token_ids, (std::vector<int32_t>{6, 3}));
            EXPECT_EQ(best[0].finish_reason, FinishReason::kLength);
        }
    }
}

}  // namespace
}  // namespace taco::server::testing
