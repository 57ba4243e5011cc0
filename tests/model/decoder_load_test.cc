// Loading a model folder: every needed tensor present with the right shape, none left unused.
#include "model/decoder.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "golden_models.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_util::load_error;
using testing_util::read_json;
using testing_util::write_json;

// Scratch copies are named per file so tests of different files never share a folder.
std::string copy_model(const std::string& name, const std::string& tag) {
    return testing_util::copy_model(name, "load_" + tag);
}

TEST(DecoderLoad, MissingTensorIsNamed) {
    std::string dir = copy_model("llama_sharded", "missing");
    json index = read_json(dir + "/model.safetensors.index.json");
    index["weight_map"].erase("model.layers.1.mlp.up_proj.weight");
    write_json(dir + "/model.safetensors.index.json", index);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("missing"), std::string::npos) << message;
}

TEST(DecoderLoad, UnusedTensorsAreAnError) {
    std::string dir = copy_model("llama", "unused");
    json config = read_json(dir + "/config.json");
    config["num_hidden_layers"] = 1;
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("not used by LlamaForCausalLM"), std::string::npos) << message;
    EXPECT_NE(message.find("model.layers.1."), std::string::npos) << message;
}

TEST(DecoderLoad, WrongShapeIsNamedWithBothShapes) {
    std::string dir = copy_model("llama", "shape");
    json config = read_json(dir + "/config.json");
    config["intermediate_size"] = 96;
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("gate_proj.weight' has shape [128, 64], expected [96, 64]"), std::string::npos) << message;
}

TEST(DecoderLoad, FolderWithoutConfigOrWeightsIsAClearError) {
    fs::path empty = fs::path(::testing::TempDir()) / "taco_decoder_load_empty";
    fs::remove_all(empty);
    fs::create_directories(empty);
    EXPECT_NE(load_error(empty.string()).find("no config.json"), std::string::npos);
    fs::copy_file(testing_util::models_root() + "/llama/config.json", empty / "config.json");
    std::string message = load_error(empty.string());
    EXPECT_NE(message.find("safetensors"), std::string::npos) << message;
}

TEST(DecoderLoad, WeightsStayInTheirOnDiskDtype) {
    for (auto [name, dtype] : {std::pair{"llama", DType::kBF16}, std::pair{"llama_bias_tied", DType::kF16},
                               std::pair{"llama_f32", DType::kF32}}) {
        auto config = ModelConfig::load_dir(testing_util::models_root() + "/" + name);
        ASSERT_TRUE(config.is_ok());
        EXPECT_EQ(config->dtype, dtype) << name;
        EXPECT_TRUE(Decoder::load(testing_util::models_root() + "/" + name).is_ok()) << name;
    }
}

}  // namespace
}  // namespace taco
