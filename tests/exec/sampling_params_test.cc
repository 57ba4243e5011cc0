#include "exec/sampling_params.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

namespace taco {
namespace {

// The error of params changed by `edit` (validated against a vocabulary of 100).
std::string error_of(const std::function<void(SamplingParams&)>& edit) {
    SamplingParams params;
    edit(params);
    const Status status = params.validate(100);
    return status.is_ok() ? "<ok>" : status.message();
}

void expect_error_names(const std::function<void(SamplingParams&)>& edit, const std::string& name) {
    const std::string message = error_of(edit);
    EXPECT_NE(message.find(name), std::string::npos) << "expected \"" << name << "\" in: " << message;
}

TEST(SamplingParams, DefaultsAreValid) {
    EXPECT_TRUE(SamplingParams().validate().is_ok());
    EXPECT_TRUE(SamplingParams().validate(32000).is_ok());
}

TEST(SamplingParams, ValidateNamesEachParameter) {
    expect_error_names([](SamplingParams& p) { p.n = 0; }, "n must be at least 1");
    expect_error_names([](SamplingParams& p) { p.n = 3, p.best_of = 2; }, "best_of");
    expect_error_names([](SamplingParams& p) { p.temperature = -1; }, "temperature");
    expect_error_names([](SamplingParams& p) { p.temperature = NAN; }, "temperature");
    expect_error_names([](SamplingParams& p) { p.temperature = 0, p.n = 2; }, "n must be 1 when using greedy");
    expect_error_names([](SamplingParams& p) { p.temperature = 0, p.best_of = 3; }, "best_of must be 1");
    expect_error_names([](SamplingParams& p) { p.top_p = 0; }, "top_p");
    expect_error_names([](SamplingParams& p) { p.top_p = 1.5; }, "top_p must be in (0, 1]");
    expect_error_names([](SamplingParams& p) { p.top_k = -2; }, "top_k");
    expect_error_names([](SamplingParams& p) { p.min_p = 1.5; }, "min_p");
    expect_error_names([](SamplingParams& p) { p.min_p = -0.1; }, "min_p");
    expect_error_names([](SamplingParams& p) { p.presence_penalty = 2.5; }, "presence_penalty");
    expect_error_names([](SamplingParams& p) { p.frequency_penalty = -3; }, "frequency_penalty");
    expect_error_names([](SamplingParams& p) { p.repetition_penalty = 0; }, "repetition_penalty");
    expect_error_names([](SamplingParams& p) { p.repetition_penalty = INFINITY; }, "repetition_penalty");
    expect_error_names([](SamplingParams& p) { p.logit_bias = {{100, 1.0f}}; }, "logit_bias token id 100");
    expect_error_names([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias");
    expect_error_names([](SamplingParams& p) { p.logit_bias = {{5, NAN}}; }, "logit_bias");
    expect_error_names([](SamplingParams& p) { p.max_tokens = -1; }, "max_tokens");
    expect_error_names([](SamplingParams& p) { p.min_tokens = -1; }, "min_tokens");
    expect_error_names([](SamplingParams& p) { p.min_tokens = 20, p.max_tokens = 10; }, "min_tokens");
    expect_error_names([](SamplingParams& p) { p.stop_token_ids = {2, 100}; }, "stop_token_ids");
    expect_error_names([](SamplingParams& p) { p.stop = {"ok", ""}; }, "stop cannot contain an empty string");
    expect_error_names([](SamplingParams& p) { p.logprobs = 21; }, "logprobs must be in [0, 20]");
    expect_error_names([](SamplingParams& p) { p.logprobs = -1; }, "logprobs");
    expect_error_names([](SamplingParams& p) { p.prompt_logprobs = 21; }, "prompt_logprobs");
}

TEST(SamplingParams, NAndBestOfHaveADocumentedMaximum) {
    expect_error_names(
        [](SamplingParams& p) {
            p.temperature = 1;
            p.n = 1000000000;
        },
        "n must be at most 256 (limits::kMaxSamplesPerPrompt)");
    expect_error_names(
        [](SamplingParams& p) {
            p.temperature = 1;
            p.best_of = 257;
        },
        "best_of must be at most 256");
    EXPECT_EQ(error_of([](SamplingParams& p) {
                  p.temperature = 1;
                  p.n = 256;
                  p.best_of = 256;
              }),
              "<ok>");
}

TEST(SamplingParams, StopConditionsHaveADocumentedMaximum) {
    expect_error_names([](SamplingParams& p) { p.stop.assign(257, "x"); }, "stop: at most 256 strings");
    expect_error_names([](SamplingParams& p) { p.stop = {std::string(4097, 'x')}; }, "kMaxStopStringBytes");
    expect_error_names([](SamplingParams& p) { p.stop_token_ids.assign(4097, 1); }, "stop_token_ids: at most 4096");
    EXPECT_EQ(error_of([](SamplingParams& p) {
                  p.stop.assign(256, std::string(4096, 'x'));
                  p.stop_token_ids.assign(4096, 1);
              }),
              "<ok>");
}

TEST(SamplingParams, AcceptsTheEdgesOfEachRange) {
    SamplingParams p;
    p.n = 2;
    p.best_of = 4;
    p.temperature = 2.0;
    p.top_p = 1.0;
    p.top_k = -1;
    p.min_p = 1.0;
    p.presence_penalty = -2;
    p.frequency_penalty = 2;
    p.repetition_penalty = 5.0;
    p.logit_bias = {{0, -100.0f}, {99, 100.0f}};
    p.min_tokens = p.max_tokens;
    p.stop_token_ids = {0, 99};
    p.stop = {"\n\n"};
    p.logprobs = 20;
    p.prompt_logprobs = 0;
    EXPECT_TRUE(p.validate(100).is_ok()) << p.validate(100).message();
    p.min_tokens = 0;
    p.max_tokens = 0;  // the prompt only
    EXPECT_TRUE(p.validate(100).is_ok()) << p.validate(100).message();
    p.temperature = 0;
    p.n = 1;
    p.best_of = 1;
    EXPECT_TRUE(p.validate(100).is_ok()) << p.validate(100).message();
}

TEST(SamplingParams, TokenIdsAreCheckedOnlyAgainstAKnownVocabulary) {
    SamplingParams p;
    p.logit_bias = {{150000, 1.0f}};
    p.stop_token_ids = {150001};
    EXPECT_TRUE(p.validate().is_ok());
    EXPECT_FALSE(p.validate(32000).is_ok());
}

}  // namespace
}  // namespace taco
