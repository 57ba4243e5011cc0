// GPT-style config.json keys (n_embd, n_layer, ffn_dim, num_kv_heads, rotary_pct, rotary_dim, ...) read into the
// standard ModelConfig fields with each config class's defaults, and the families' ArchSpecs built from them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/arch_registry.h"
#include "model/model_config.h"

namespace taco {
namespace {

using json = nlohmann::json;

ModelConfig parse(const json& config) {
    auto result = ModelConfig::from_json(config, "config.json");
    EXPECT_TRUE(result.is_ok()) << result.status().message();
    return result.is_ok() ? *result : ModelConfig();
}

std::string spec_error(const json& config) {
    auto parsed = ModelConfig::from_json(config, "config.json");
    if (!parsed.is_ok()) return parsed.status().message();
    auto spec = arch_spec_for(*parsed);
    return spec.is_ok() ? "" : spec.status().message();
}

TEST(GptConfig, Gpt2KeysMapToTheStandardFields) {
    ModelConfig c = parse(json::parse(R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": 100, "n_embd": 32, "n_layer": 3, "n_head": 4, "n_positions": 64, "n_inner": null,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"})"));
    EXPECT_EQ(c.hidden_size, 32);
    EXPECT_EQ(c.num_hidden_layers, 3);
    EXPECT_EQ(c.num_attention_heads, 4);
    EXPECT_EQ(c.num_key_value_heads, 4);
    EXPECT_EQ(c.head_dim, 8);
    EXPECT_EQ(c.intermediate_size, 128);  // n_inner null: 4 x n_embd
    EXPECT_EQ(c.max_position_embeddings, 64);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_EQ(c.hidden_act, "gelu_new");
    EXPECT_TRUE(c.tie_word_embeddings);  // PretrainedConfig's default, left out of config.json
    auto spec = arch_spec_for(c);
    ASSERT_TRUE(spec.is_ok()) << spec.status().message();
    EXPECT_EQ(spec->attention.positions, PositionEncoding::kLearned);
    EXPECT_TRUE(spec->transposed_linears);
    EXPECT_EQ(spec->mlp.activation, ops::Activation::kGeluTanh);
}

TEST(GptConfig, BigCodeMultiQueryHasOneKvHead) {
    json config = json::parse(R"({"architectures": ["GPTBigCodeForCausalLM"], "model_type": "gpt_bigcode",
        "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64})");
    EXPECT_EQ(parse(config).num_key_value_heads, 1);
    config["multi_query"] = false;
    EXPECT_EQ(parse(config).num_key_value_heads, 4);
}

TEST(GptConfig, NeoxRotaryPctAndBaseBecomePartialFactorAndTheta) {
    ModelConfig c = parse(json::parse(R"({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
        "vocab_size": 100, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "rotary_pct": 0.25, "rotary_emb_base": 5000, "layer_norm_eps": 1e-5})"));
    EXPECT_EQ(c.rotary_dim(), 4);
    EXPECT_DOUBLE_EQ(c.rope.theta, 5000);
    EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(GptConfig, NeoxAndPhiTransformers5RopeParametersCarryThePartialFactor) {
    ModelConfig neox = parse(json::parse(R"({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
        "vocab_size": 100, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "rope_parameters": {"rope_type": "default", "rope_theta": 20000.0,
        "partial_rotary_factor": 0.5}})"));
    EXPECT_EQ(neox.rotary_dim(), 8);
    EXPECT_DOUBLE_EQ(neox.rope.theta, 20000);
    ModelConfig phi = parse(json::parse(R"({"architectures": ["PhiForCausalLM"], "model_type": "phi",
        "vocab_size": 100, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
        "partial_rotary_factor": 0.25}})"));
    EXPECT_EQ(phi.rotary_dim(), 4);
}

TEST(GptConfig, GptjRotaryDimCountIsKeptExactly) {
    // head_dim 80 with rotary_dim 24: 24 / 80 * 80 is not 24 in doubles.
    json config = json::parse(R"({"architectures": ["GPTJForCausalLM"], "model_type": "gptj", "vocab_size": 100,
        "n_embd": 320, "n_layer": 2, "n_head": 4, "n_positions": 64})");
    for (int rotary_dim : {2, 24, 32, 46, 64, 80}) {
        config["rotary_dim"] = rotary_dim;
        EXPECT_EQ(parse(config).rotary_dim(), rotary_dim);
    }
    config["rotary_dim"] = 96;
    auto bad = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("rotary_dim"), std::string::npos) << bad.status().message();
}

TEST(GptConfig, FalconKvHeadsFollowTheDecoderArchitecture) {
    json config = json::parse(R"({"architectures": ["FalconForCausalLM"], "model_type": "falcon",
        "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8})");
    ModelConfig old_mqa = parse(config);
    EXPECT_EQ(old_mqa.num_key_value_heads, 1);
    EXPECT_EQ(old_mqa.intermediate_size, 256);
    config["multi_query"] = false;
    EXPECT_EQ(parse(config).num_key_value_heads, 8);
    config["new_decoder_architecture"] = true;
    config["num_kv_heads"] = 2;
    EXPECT_EQ(parse(config).num_key_value_heads, 2);
    auto spec = arch_spec_for(parse(config));
    ASSERT_TRUE(spec.is_ok());
    EXPECT_EQ(spec->attention.qkv_layout, QkvLayout::kPerKvGroup);
    EXPECT_TRUE(spec->attention.fused_qkv);
    EXPECT_EQ(spec->residual, ResidualLayout::kParallelOwnNorms);
}

TEST(GptConfig, OptPostNormHasNoFinalNormAndProjectionsFollowWordEmbedProjDim) {
    json config = json::parse(R"({"architectures": ["OPTForCausalLM"], "model_type": "opt", "vocab_size": 100,
        "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "ffn_dim": 128,
        "max_position_embeddings": 32, "do_layer_norm_before": false, "word_embed_proj_dim": 32})");
    ModelConfig c = parse(config);
    EXPECT_EQ(c.intermediate_size, 128);
    EXPECT_EQ(c.hidden_act, "relu");
    auto spec = arch_spec_for(c);
    ASSERT_TRUE(spec.is_ok());
    EXPECT_EQ(spec->residual, ResidualLayout::kPostNorm);
    EXPECT_TRUE(spec->names.final_norm.empty());
    EXPECT_EQ(spec->embedding.dim, 32);
    EXPECT_EQ(spec->names.project_in, "model.decoder.project_in");
    EXPECT_EQ(spec->embedding.position_offset, 2);
    config["layer_norm_elementwise_affine"] = false;
    EXPECT_NE(spec_error(config).find("layer_norm_elementwise_affine"), std::string::npos);
}

TEST(GptConfig, WrongTypesAndUnsupportedOptionsNameTheKey) {
    json config = json::parse(R"({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
        "vocab_size": 100, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "use_parallel_residual": "yes"})");
    EXPECT_NE(spec_error(config).find("use_parallel_residual"), std::string::npos) << spec_error(config);
    json bloom = json::parse(R"({"architectures": ["BloomForCausalLM"], "model_type": "bloom", "vocab_size": 100,
        "hidden_size": 64, "n_layer": 2, "n_head": 4, "apply_residual_connection_post_layernorm": true})");
    EXPECT_NE(spec_error(bloom).find("apply_residual_connection_post_layernorm"), std::string::npos);
    json bigcode = json::parse(R"({"architectures": ["GPTBigCodeForCausalLM"], "model_type": "gpt_bigcode",
        "vocab_size": 100, "n_embd": 32, "n_layer": 2, "n_head": 4, "multi_query": 1})");
    EXPECT_NE(spec_error(bigcode).find("multi_query"), std::string::npos) << spec_error(bigcode);
}

}  // namespace
}  // namespace taco
