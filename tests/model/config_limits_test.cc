// Absurd sizes in config.json (core/limits.h): a clear error naming the key, before anything is sized from them.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "model/model_config.h"

namespace taco {
namespace {

using json = nlohmann::json;

json llama_config() {
    return json::parse(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 512, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0})");
}

std::string error_with(const char* key, const json& value) {
    json config = llama_config();
    config[key] = value;
    auto result = ModelConfig::from_json(config, "config.json");
    return result.is_ok() ? "" : result.status().message();
}

TEST(ConfigLimits, HugeOrNegativeSizesNameTheKeyAndTheLimit) {
    const int64_t kHuge = int64_t(1) << 40;
    EXPECT_NE(error_with("num_hidden_layers", kHuge).find("'num_hidden_layers' = 1099511627776 is outside [0, 4096]"),
              std::string::npos)
        << error_with("num_hidden_layers", kHuge);
    for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
                            "num_key_value_heads", "head_dim", "num_experts", "moe_intermediate_size"}) {
        for (int64_t value : {kHuge, int64_t(-5), INT64_MAX}) {
            const std::string message = error_with(key, value);
            EXPECT_NE(message.find(std::string("'") + key + "'"), std::string::npos) << key << ": " << message;
            EXPECT_NE(message.find("config.json"), std::string::npos) << message;
        }
    }
    EXPECT_NE(error_with("max_position_embeddings", kHuge).find("limits::kMaxModelPositions"), std::string::npos);
    EXPECT_NE(error_with("sliding_window", -1).find("'sliding_window'"), std::string::npos);
    EXPECT_NE(error_with("partial_rotary_factor", 1e300).find("'partial_rotary_factor'"), std::string::npos)
        << error_with("partial_rotary_factor", 1e300);
    // A whole float past int64 (found by fuzz_config_json: the cast was undefined behaviour), and 1e15 within it.
    EXPECT_NE(error_with("hidden_size", 2.2e33).find("'hidden_size' must be an integer, got 2.2e+33"),
              std::string::npos)
        << error_with("hidden_size", 2.2e33);
    EXPECT_NE(error_with("num_hidden_layers", -1e300).find("'num_hidden_layers' must be an integer"),
              std::string::npos);
    EXPECT_EQ(error_with("max_position_embeddings", 4096.0), "");  // a whole float is that integer
    // An unsigned value past int64 is refused, not wrapped.
    EXPECT_NE(error_with("num_hidden_layers", uint64_t(18446744073709551615ull))
                  .find("'num_hidden_layers' must be an integer within int64, got 18446744073709551615"),
              std::string::npos)
        << error_with("num_hidden_layers", uint64_t(18446744073709551615ull));
}

// Each size within its bound, but a fused width (q rows = heads x head_dim, an expert stack's rows) past it: a
// weight of 2^48 elements and more, whose byte count a product over layers would overflow.
TEST(ConfigLimits, FusedWidthsAreBoundedLikeOneSize) {
    json config = llama_config();
    config["num_attention_heads"] = 1 << 16;
    config["num_key_value_heads"] = 1;
    config["head_dim"] = 1 << 16;
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("'num_attention_heads' x 'head_dim' = 65536 x 65536 is over 16777216"),
              std::string::npos)
        << result.status().message();
    config = llama_config();
    config["num_local_experts"] = 1 << 20;
    config["num_experts_per_tok"] = 2;
    config["intermediate_size"] = 1 << 20;
    result = ModelConfig::from_json(config, "config.json");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("'num_experts' x 'intermediate_size'"), std::string::npos)
        << result.status().message();
}

TEST(ConfigLimits, TokenIdsOutOfRangeAreRefused) {
    EXPECT_NE(error_with("eos_token_id", int64_t(1) << 40).find("'eos_token_id'"), std::string::npos)
        << error_with("eos_token_id", int64_t(1) << 40);
    EXPECT_NE(error_with("bos_token_id", json::array({1, -3})).find("'bos_token_id'"), std::string::npos);
}

TEST(ConfigLimits, HugeRopeFactorClampsTheDerivedLength) {
    json config = llama_config();
    config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1e300}};
    auto result = ModelConfig::from_json(config, "config.json");
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result->derived_max_model_len(), limits::kMaxModelPositions);
}

TEST(ConfigLimits, OrdinaryConfigLoads) {
    auto result = ModelConfig::from_json(llama_config(), "config.json");
    ASSERT_TRUE(result.is_ok()) << result.status().message();
}

}  // namespace
}  // namespace taco
