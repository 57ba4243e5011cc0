// Remote-code families' own config keys (Qwen v1, ChatGLM2/3) become the standard ModelConfig fields; values the
// engine cannot honour are errors naming the key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace taco {
namespace {

using json = nlohmann::json;

json qwen_config() {
    return {{"architectures", {"QWenLMHeadModel"}},
            {"model_type", "qwen"},
            {"vocab_size", 512},
            {"hidden_size", 64},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"kv_channels", 16},
            {"intermediate_size", 256},
            {"layer_norm_epsilon", 1e-5},
            {"rotary_emb_base", 20000},
            {"seq_length", 128},
            {"max_position_embeddings", 8192}};
}

json chatglm_config() {
    return {{"architectures", {"ChatGLMModel"}},
            {"model_type", "chatglm"},
            {"num_layers", 3},
            {"padded_vocab_size", 640},
            {"vocab_size", 600},
            {"hidden_size", 64},
            {"ffn_hidden_size", 96},
            {"kv_channels", 16},
            {"num_attention_heads", 4},
            {"multi_query_attention", true},
            {"multi_query_group_num", 2},
            {"layernorm_epsilon", 1e-5},
            {"seq_length", 256}};
}

TEST(RemoteConfigKeys, QwenMlpWidthIsHalfOfIntermediateSize) {
    auto config = ModelConfig::from_json(qwen_config(), "config.json");
    ASSERT_TRUE(config.is_ok()) << config.status().message();
    EXPECT_EQ(config->intermediate_size, 128);
    EXPECT_EQ(config->head_dim, 16);
    EXPECT_EQ(config->num_key_value_heads, 4);
    EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(config->rope.theta, 20000.0);
    EXPECT_EQ(config->raw["intermediate_size"], 256);  // raw keeps the file's values
}

TEST(RemoteConfigKeys, QwenContextIsCappedAtSeqLengthWhileDynamicNtkIsOn) {
    auto capped = ModelConfig::from_json(qwen_config(), "config.json");
    ASSERT_TRUE(capped.is_ok()) << capped.status().message();
    EXPECT_EQ(capped->max_position_embeddings, 128);
    json plain = qwen_config();
    plain["use_dynamic_ntk"] = false;
    plain["use_logn_attn"] = false;
    auto uncapped = ModelConfig::from_json(plain, "config.json");
    ASSERT_TRUE(uncapped.is_ok()) << uncapped.status().message();
    EXPECT_EQ(uncapped->max_position_embeddings, 8192);
}

TEST(RemoteConfigKeys, QwenOddIntermediateSizeIsAnError) {
    json config = qwen_config();
    config["intermediate_size"] = 255;
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("intermediate_size"), std::string::npos);
}

TEST(RemoteConfigKeys, ChatGlmKeysMapToStandardFields) {
    auto config = ModelConfig::from_json(chatglm_config(), "config.json");
    ASSERT_TRUE(config.is_ok()) << config.status().message();
    EXPECT_EQ(config->num_hidden_layers, 3);
    EXPECT_EQ(config->vocab_size, 640);  // the padded table, not vocab_size
    EXPECT_EQ(config->intermediate_size, 96);
    EXPECT_EQ(config->head_dim, 16);
    EXPECT_EQ(config->num_key_value_heads, 2);
    EXPECT_EQ(config->max_position_embeddings, 256);
    EXPECT_EQ(config->rotary_dim(), 8);  // the first half of each head
}

TEST(RemoteConfigKeys, ChatGlmWithoutMultiQueryHasOneKvHeadPerHead) {
    json config = chatglm_config();
    config["multi_query_attention"] = false;
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result->num_key_value_heads, 4);
}

TEST(RemoteConfigKeys, ChatGlmRopeRatioIsAnErrorNamingIt) {
    json config = chatglm_config();
    config["rope_ratio"] = 16;
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("rope_ratio"), std::string::npos);
}

TEST(RemoteConfigKeys, ChatGlmLayerCountOfWrongTypeIsAnErrorNamingIt) {
    json config = chatglm_config();
    config["num_layers"] = "three";
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("num_layers"), std::string::npos);
}

}  // namespace
}  // namespace taco
