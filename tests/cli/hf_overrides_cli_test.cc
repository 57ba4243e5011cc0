// --hf-overrides: a JSON object merged into the model's config.json before the model is built (serve and generate),
// as vLLM's; a bad value is the error a bad config.json gives, naming the key.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_util::generated_token_ids;
using testing_util::run_taco;

// A copy of the golden llama (max_position_embeddings 128, rope_theta 10000) whose config.json has `patch` on top.
fs::path llama_copy(const std::string& name, const json& patch) {
    const fs::path dir = fs::temp_directory_path() / ("taco_hfo_cli_" + std::to_string(::getpid()) + name);
    fs::remove_all(dir);
    fs::copy(testing_util::golden_model_dir("llama"), dir, fs::copy_options::recursive);
    json config = json::parse(std::ifstream(dir / "config.json"));
    config.merge_patch(patch);
    std::ofstream(dir / "config.json") << config.dump(2);
    return dir;
}

const std::string kGenerate = " --prompt-ids 1,17,42,99 --ignore-eos --json --temperature 0 --max-tokens 8";

// rope_theta inside rope_parameters (a nested object: merged, so rope_type stays): the tokens are those of a model
// whose config.json says so, and not the original's.
TEST(HfOverridesCli, ANestedKeyIsAsIfConfigJsonSaidIt) {
    const std::string llama = testing_util::golden_model_dir("llama");
    const fs::path theta10 = llama_copy("theta10", {{"rope_parameters", {{"rope_theta", 10.0}}}});
    const std::vector<int32_t> original = generated_token_ids("generate " + llama + kGenerate);
    const std::vector<int32_t> want = generated_token_ids("generate " + theta10.string() + kGenerate);
    ASSERT_EQ(want.size(), 8u);
    EXPECT_NE(want, original);
    EXPECT_EQ(generated_token_ids("generate " + llama + kGenerate +
                                  " --hf-overrides '{\"rope_parameters\": {\"rope_theta\": 10}}'"),
              want);
    // The model's folder is as it was.
    EXPECT_EQ(generated_token_ids("generate " + llama + kGenerate), original);
    fs::remove_all(theta10);
}

// max_position_embeddings sets the model's length (the max_model_len the server reports); serve and generate both
// take the flag.
TEST(HfOverridesCli, MaxPositionEmbeddingsIsTheModelsLength) {
    const std::string llama = testing_util::golden_model_dir("llama");
    const std::string flag = " --hf-overrides '{\"max_position_embeddings\": 64}' --max-model-len 100";
    auto r = run_taco("generate " + llama + kGenerate + flag);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("--max-model-len 100 is above the model's 64"), std::string::npos) << r.err;
    // The overlay folder the engine was loaded from is gone once it is built (here, before the port is refused).
    const fs::path tmp = fs::temp_directory_path() / ("taco_hfo_cli_tmp_" + std::to_string(::getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    auto served = run_taco("serve " + llama + " --port -1" + flag, "", {{"TMPDIR", tmp.string()}});
    EXPECT_TRUE(fs::is_empty(tmp));
    fs::remove_all(tmp);
    EXPECT_EQ(served.exit_code, 1);
    EXPECT_NE(served.err.find("--max-model-len 100 is above the model's 64"), std::string::npos) << served.err;
    EXPECT_NE(served.err.find("--port -1 is out of range"), std::string::npos) << served.err;  // past the engine
    // A nested object merged: rope_type linear with factor 4 gives 4 x 64.
    auto scaled = run_taco("generate " + llama + kGenerate +
                           " --hf-overrides '{\"max_position_embeddings\": 64, \"rope_parameters\": {\"rope_type\": "
                           "\"linear\", \"factor\": 4}}' --max-model-len 300");
    EXPECT_EQ(scaled.exit_code, 0) << scaled.err;
    EXPECT_NE(scaled.err.find("--max-model-len 300 is above the model's 256"), std::string::npos) << scaled.err;
}

// Both flags are in serve's --help, and no longer among the refused ones.
TEST(HfOverridesCli, ServeHelpListsHfOverridesAndOverrideGenerationConfig) {
    auto r = run_taco("serve --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--hf-overrides"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("merged into the model's config.json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--override-generation-config"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("laid over the --generation-config defaults"), std::string::npos) << r.out;
}

TEST(HfOverridesCli, BadOverridesAreErrorsNamingTheFlagOrTheKey) {
    const std::string llama = testing_util::golden_model_dir("llama");
    auto refused = [&](const std::string& overrides, const std::string& message) {
        for (const std::string& command : {"generate " + llama + kGenerate, "serve " + llama + " --port 0"}) {
            auto r = run_taco(command + " --hf-overrides '" + overrides + "'");
            EXPECT_NE(r.exit_code, 0) << command << " " << overrides;
            EXPECT_NE(r.err.find(message), std::string::npos) << command << " " << overrides << ": " << r.err;
        }
    };
    refused("{\"rope_theta\": ", "--hf-overrides is not valid JSON");
    refused("[1]", "--hf-overrides must be a JSON object");
    refused("7", "--hf-overrides must be a JSON object");
    refused("{\"num_hidden_layers\": \"two\"}", "config.json with --hf-overrides");
    refused("{\"num_hidden_layers\": \"two\"}", "num_hidden_layers");
    refused("{\"hidden_size\": 0}", "'hidden_size' must be positive");
}

}  // namespace
}  // namespace taco
