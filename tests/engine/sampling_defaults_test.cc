// SamplingDefaults: which keys of generation_config.json become request defaults, and clear errors otherwise.
#include "engine/sampling_defaults.h"

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace taco {
namespace {

using json = nlohmann::json;

TEST(SamplingDefaults, TakesVllmsKeysAndMaxNewTokensAsMaxTokens) {
    auto d = SamplingDefaults::from_json({{"temperature", 0.6},
                                          {"top_p", 0.95},
                                          {"top_k", 20},
                                          {"min_p", 0.05},
                                          {"repetition_penalty", 1.1},
                                          {"max_new_tokens", 300},
                                          {"do_sample", true},
                                          {"eos_token_id", {1, 2}}},
                                         "g.json");
    ASSERT_TRUE(d.is_ok()) << d.status().message();
    SamplingParams p;
    d->apply(p);
    EXPECT_EQ(p.temperature, 0.6);
    EXPECT_EQ(p.top_p, 0.95);
    EXPECT_EQ(p.top_k, 20);
    EXPECT_EQ(p.min_p, 0.05);
    EXPECT_EQ(p.repetition_penalty, 1.1);
    EXPECT_EQ(p.max_tokens, 300);
    EXPECT_EQ(d->describe(),
              "temperature=0.6, top_p=0.95, top_k=20, min_p=0.05, repetition_penalty=1.1, max_tokens=300");
}

TEST(SamplingDefaults, TransformersDefaultTopKIsNoDefaultAndAbsentKeysChangeNothing) {
    auto d = SamplingDefaults::from_json({{"top_k", 50}, {"bos_token_id", 1}}, "g.json");
    ASSERT_TRUE(d.is_ok());
    EXPECT_TRUE(d->empty());
    SamplingParams p, untouched;
    d->apply(p);
    EXPECT_EQ(p.top_k, untouched.top_k);
    EXPECT_EQ(p.max_tokens, untouched.max_tokens);
}

TEST(SamplingDefaults, ErrorsNameTheFileAndKey) {
    auto wrong_type = SamplingDefaults::from_json({{"top_k", 1.5}}, "g.json");
    ASSERT_FALSE(wrong_type.is_ok());
    EXPECT_NE(wrong_type.status().message().find("g.json: 'top_k' must be an integer"), std::string::npos);
    auto out_of_range = SamplingDefaults::from_json({{"temperature", -1}}, "g.json");
    ASSERT_FALSE(out_of_range.is_ok());
    EXPECT_NE(out_of_range.status().message().find("temperature"), std::string::npos);
    auto zero = SamplingDefaults::from_json({{"max_new_tokens", 0}}, "g.json");
    ASSERT_FALSE(zero.is_ok());
    EXPECT_NE(zero.status().message().find("max_new_tokens"), std::string::npos);
    EXPECT_FALSE(SamplingDefaults::from_json(json::array(), "g.json").is_ok());
}

TEST(SamplingDefaults, ModesAutoVllmAndFolder) {
    const std::string llama = testing_util::model_dir("llama");  // its generation_config.json has no sampling keys
    auto from_model = SamplingDefaults::load("auto", llama);
    ASSERT_TRUE(from_model.is_ok()) << from_model.status().message();
    EXPECT_TRUE(from_model->empty());
    auto demo = SamplingDefaults::load("auto", std::string(TACO_SOURCE_DIR) + "/models/demo");
    ASSERT_TRUE(demo.is_ok()) << demo.status().message();
    EXPECT_EQ(demo->temperature, 0.7);
    EXPECT_EQ(demo->top_p, 0.9);
    auto none = SamplingDefaults::load("vllm", std::string(TACO_SOURCE_DIR) + "/models/demo");
    ASSERT_TRUE(none.is_ok());
    EXPECT_TRUE(none->empty());
    auto folder = SamplingDefaults::load(std::string(TACO_SOURCE_DIR) + "/models/demo", llama);
    ASSERT_TRUE(folder.is_ok());
    EXPECT_EQ(folder->temperature, 0.7);
    EXPECT_FALSE(SamplingDefaults::load("/no/such/folder", llama).is_ok());
    auto no_file = SamplingDefaults::load(std::string(TACO_SOURCE_DIR) + "/tests", llama);
    ASSERT_FALSE(no_file.is_ok());
    EXPECT_NE(no_file.status().message().find("no generation_config.json"), std::string::npos);
}

// --override-generation-config: laid over the file's values key by key ("auto"), or alone ("vllm").
TEST(SamplingDefaults, OverridesReplaceTheFilesKeysOrStandAloneWithVllm) {
    const std::string demo = std::string(TACO_SOURCE_DIR) + "/models/demo";  // temperature 0.7, top_p 0.9
    const json overrides = {{"temperature", 0.2}, {"top_k", 50}, {"max_new_tokens", 12}, {"repetition_penalty", 1.2}};
    auto merged = SamplingDefaults::load("auto", demo, overrides);
    ASSERT_TRUE(merged.is_ok()) << merged.status().message();
    // An override of top_k 50 is kept: only the file goes through transformers' diff.
    EXPECT_EQ(merged->describe(), "temperature=0.2, top_p=0.9, top_k=50, repetition_penalty=1.2, max_tokens=12");
    auto alone = SamplingDefaults::load("vllm", demo, {{"min_p", 0.1}});
    ASSERT_TRUE(alone.is_ok()) << alone.status().message();
    EXPECT_EQ(alone->describe(), "min_p=0.1");
    for (const json& nothing : {json(), json::object()}) {
        auto same = SamplingDefaults::load("auto", demo, nothing);
        ASSERT_TRUE(same.is_ok()) << same.status().message();
        EXPECT_EQ(same->describe(), "temperature=0.7, top_p=0.9");
    }
}

TEST(SamplingDefaults, BadOverridesAreErrorsNamingTheFlagAndKey) {
    const std::string demo = std::string(TACO_SOURCE_DIR) + "/models/demo";
    auto message = [&](const json& overrides) {
        auto d = SamplingDefaults::load("auto", demo, overrides);
        EXPECT_FALSE(d.is_ok()) << overrides.dump();
        return d.is_ok() ? std::string() : d.status().message();
    };
    EXPECT_NE(message({{"temprature", 0.5}}).find("--override-generation-config: 'temprature' is not a key"),
              std::string::npos);
    EXPECT_NE(message({{"do_sample", true}}).find("'do_sample'"), std::string::npos);
    EXPECT_NE(message({{"temperature", "hot"}}).find("--override-generation-config: 'temperature' must be a number"),
              std::string::npos);
    EXPECT_NE(message({{"top_k", 1.5}}).find("--override-generation-config: 'top_k' must be an integer"),
              std::string::npos);
    EXPECT_NE(message({{"max_new_tokens", nullptr}}).find("'max_new_tokens' must be a number"), std::string::npos);
    EXPECT_NE(message({{"top_p", 1.5}}).find("--override-generation-config: "), std::string::npos);
    EXPECT_NE(message({{"top_p", 1.5}}).find("top_p"), std::string::npos);
    EXPECT_NE(
        message({{"max_new_tokens", 0}}).find("--override-generation-config: 'max_new_tokens' must be at least 1"),
        std::string::npos);
    EXPECT_NE(message(json::array({1})).find("--override-generation-config must be a JSON object"), std::string::npos);
    EXPECT_NE(message(json(0.5)).find("--override-generation-config must be a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace taco
