// Loading GPT-style checkpoints: Conv1D shapes are checked as stored ([in, out]), names may lack the base-model
// prefix, and causal-mask buffers of old checkpoints are ignored while real leftovers stay an error.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "golden_models.h"
#include "model/decoder.h"

namespace taco {
namespace {

using json = nlohmann::json;
using testing_util::load_error;
using testing_util::read_json;
using testing_util::write_json;

// Scratch copies are named per file so tests of different files never share a folder.
std::string copy_model(const std::string& name, const std::string& tag) {
    return testing_util::copy_model(name, "gpt_" + tag);
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
