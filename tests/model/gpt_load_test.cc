// Loading GPT-style checkpoints: Conv1D shapes are checked as stored ([in, out]), names may lack the base-model
// prefix, and causal-mask buffers of old checkpoints are ignored while real leftovers stay an error.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "golden_models.h"
#include "model/decoder.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string copy_model(const std::string& name, const std::string& tag) {
    fs::path dst = fs::path(::testing::TempDir()) / ("taco_gpt_load_" + tag);
    fs::remove_all(dst);
    fs::copy(testing_util::models_root() + "/" + name, dst, fs::copy_options::recursive);
    return dst.string();
}

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

void write_json(const std::string& path, const json& value) { std::ofstream(path) << value.dump(2); }

std::string load_error(const std::string& dir) {
    auto decoder = Decoder::load(dir);
    return decoder.is_ok() ? "" : decoder.status().message();
}

TEST(GptLoad, Conv1DShapeErrorsNameTheStoredInOutShape) {
    std::string dir = copy_model("gpt2", "conv1d");
    json config = read_json(dir + "/config.json");
    config["n_inner"] = 128;  // the checkpoint's c_fc is [64, 256]
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("mlp.c_fc.weight' has shape [64, 256], expected [64, 128]"), std::string::npos) << message;
}

TEST(GptLoad, PerHeadFusedQkvNeedsAsManyKvHeadsAsHeads) {
    std::string dir = copy_model("gpt_neox", "qkv");
    json config = read_json(dir + "/config.json");
    config["num_key_value_heads"] = 2;  // GPT-NeoX's [q_h | k_h | v_h] rows cannot hold 4 query heads over 2 kv heads
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("tensor 'gpt_neox.layers.0.attention.query_key_value.weight': a per-head fused qkv needs as "
                           "many kv heads as heads (got 2 and 4)"),
              std::string::npos)
        << message;
}

TEST(GptLoad, LeftoverTensorsAreStillAnErrorWithBaseModelPrefixFallback) {
    std::string dir = copy_model("gpt2_noprefix", "leftover");
    json config = read_json(dir + "/config.json");
    config["n_layer"] = 1;
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("not used by GPT2LMHeadModel"), std::string::npos) << message;
    EXPECT_NE(message.find("h.1."), std::string::npos) << message;
}

}  // namespace
}  // namespace taco
