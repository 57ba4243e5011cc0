#include "model/model_config.h"

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "golden_models.h"
#include "model/arch_registry.h"

namespace taco {
namespace {

using json = nlohmann::json;

json llama_config() {
    return json::parse(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 512, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0})");
}

std::string error_of(const json& config) {
    auto result = ModelConfig::from_json(config, "config.json");
    return result.is_ok() ? "" : result.status().message();
}

void expect_same_rope(const RopeConfig& a, const RopeConfig& b) {
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.theta, b.theta);
    EXPECT_EQ(a.factor, b.factor);
    EXPECT_EQ(a.original_max_position_embeddings, b.original_max_position_embeddings);
    EXPECT_EQ(a.low_freq_factor, b.low_freq_factor);
    EXPECT_EQ(a.high_freq_factor, b.high_freq_factor);
}

TEST(ModelConfig, ReadsTransformers4And5KeysAlike) {
    for (const char* name : {"llama", "llama_llama3", "llama_linear"}) {
        const std::string dir = testing_util::models_root() + "/" + name;
        auto v5 = ModelConfig::load_dir(dir);
        ASSERT_TRUE(v5.is_ok()) << v5.status().message();
        auto v4_json = read_json_file(dir + "/config_v4.json");
        ASSERT_TRUE(v4_json.is_ok()) << v4_json.status().message();
        auto v4 = ModelConfig::from_json(*v4_json, "config_v4.json");
        ASSERT_TRUE(v4.is_ok()) << v4.status().message();
        expect_same_rope(v5->rope, v4->rope);
        EXPECT_EQ(v5->dtype, v4->dtype) << name;
    }
    auto llama3 = ModelConfig::load_dir(testing_util::models_root() + "/llama_llama3");
    EXPECT_EQ(llama3->rope.type, RopeType::kLlama3);
    EXPECT_EQ(llama3->rope.theta, 500000.0);
    EXPECT_EQ(llama3->dtype, DType::kBF16);
}

TEST(ModelConfig, GenerationConfigEosMayBeAList) {
    auto config = ModelConfig::load_dir(testing_util::models_root() + "/llama_sharded");
    ASSERT_TRUE(config.is_ok()) << config.status().message();
    EXPECT_EQ(config->generation.eos_token_ids, (std::vector<int32_t>{2, 3}));
    auto single = ModelConfig::load_dir(testing_util::models_root() + "/llama");
    EXPECT_EQ(single->generation.eos_token_ids, (std::vector<int32_t>{2}));
}

TEST(ModelConfig, GenerationConfigSamplingDefaultsAreRead) {
    auto config = ModelConfig::from_json(llama_config(), "config.json");
    ASSERT_TRUE(config.is_ok());
    json generation = {
        {"do_sample", true}, {"temperature", 0.6}, {"top_p", 0.9}, {"top_k", 40}, {"eos_token_id", {128001, 128009}}};
    ASSERT_TRUE(config->apply_generation_config(generation, "generation_config.json").is_ok());
    EXPECT_TRUE(config->generation.do_sample);
    EXPECT_EQ(config->generation.temperature, 0.6);
    EXPECT_EQ(config->generation.top_p, 0.9);
    EXPECT_EQ(config->generation.top_k, 40);
    EXPECT_EQ(config->generation.eos_token_ids, (std::vector<int32_t>{128001, 128009}));
    auto bad = config->apply_generation_config({{"temperature", "hot"}}, "generation_config.json");
    EXPECT_NE(bad.message().find("'temperature' must be a number"), std::string::npos) << bad.message();
}

TEST(ModelConfig, DerivesHeadDimAndKvHeads) {
    json c = llama_config();
    c.erase("num_key_value_heads");
    auto config = ModelConfig::from_json(c, "config.json");
    ASSERT_TRUE(config.is_ok());
    EXPECT_EQ(config->num_key_value_heads, 4);
    EXPECT_EQ(config->head_dim, 16);
}

TEST(ModelConfig, QwenSlidingWindowFollowsUseSlidingWindowAndMaxWindowLayers) {
    json c = llama_config();
    c["architectures"] = {"Qwen2ForCausalLM"};
    c["sliding_window"] = 8;
    c["use_sliding_window"] = false;
    c["max_window_layers"] = 1;
    EXPECT_EQ(ModelConfig::from_json(c, "config.json")->sliding_window, 0);
    c["use_sliding_window"] = true;
    auto on = ModelConfig::from_json(c, "config.json");
    EXPECT_EQ(on->sliding_window, 8);
    EXPECT_EQ(on->layer_types, (std::vector<LayerAttention>{LayerAttention::kFull, LayerAttention::kSliding}));
}

TEST(ModelConfig, UnsupportedOrMalformedInputNamesTheProblem) {
    json c = llama_config();
    c["rope_scaling"] = {{"rope_type", "su"}, {"factor", 2.0}};
    EXPECT_NE(error_of(c).find("rope type 'su' is not supported"), std::string::npos) << error_of(c);

    c = llama_config();
    c["rope_parameters"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    EXPECT_NE(error_of(c).find("needs 'original_max_position_embeddings'"), std::string::npos) << error_of(c);

    c = llama_config();
    c["hidden_size"] = "64";
    EXPECT_NE(error_of(c).find("'hidden_size' must be an integer"), std::string::npos) << error_of(c);

    c = llama_config();
    c["num_key_value_heads"] = 3;
    EXPECT_NE(error_of(c).find("must divide 'num_attention_heads'"), std::string::npos) << error_of(c);

    c = llama_config();
    c.erase("architectures");
    EXPECT_NE(error_of(c).find("'architectures'"), std::string::npos);

    c = llama_config();
    c["quantization_config"] = {{"quant_method", "awq"}};
    EXPECT_NE(error_of(c).find("quantized checkpoints"), std::string::npos);

    c = llama_config();
    c["torch_dtype"] = "float64";
    EXPECT_NE(error_of(c).find("'torch_dtype' = 'float64' is not supported"), std::string::npos) << error_of(c);

    EXPECT_NE(error_of(json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(ModelConfig, DerivedMaxModelLenFollowsVllmForEachRopeKind) {
    auto len = [](const char* name) {
        return ModelConfig::load_dir(testing_util::models_root() + "/" + name)->derived_max_model_len();
    };
    EXPECT_EQ(len("llama"), 128);
    EXPECT_EQ(len("llama_linear"), 64);   // 32 x 2
    EXPECT_EQ(len("llama_yarn"), 128);    // original 32 x 4
    EXPECT_EQ(len("llama_llama3"), 128);  // max_position_embeddings as is
}

TEST(ArchRegistry, UnknownArchitectureIsAnErrorListingTheSupportedOnes) {
    json c = llama_config();
    c["architectures"] = {"MambaForCausalLM"};
    auto config = ModelConfig::from_json(c, "config.json");
    ASSERT_TRUE(config.is_ok());
    auto spec = arch_spec_for(*config);
    ASSERT_FALSE(spec.is_ok());
    EXPECT_NE(spec.status().message().find("'MambaForCausalLM' is not supported"), std::string::npos);
    EXPECT_NE(spec.status().message().find("LlamaForCausalLM"), std::string::npos);
}

TEST(ArchRegistry, UnknownActivationIsAnError) {
    json c = llama_config();
    c["hidden_act"] = "swiglu_fancy";
    auto spec = arch_spec_for(*ModelConfig::from_json(c, "config.json"));
    ASSERT_FALSE(spec.is_ok());
    EXPECT_NE(spec.status().message().find("hidden_act 'swiglu_fancy'"), std::string::npos);
}

}  // namespace
}  // namespace taco
