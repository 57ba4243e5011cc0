// `taco_llm generate --generation-config`: the model's generation_config.json fills the sampling flags that are
// not given ("auto"), or is ignored ("vllm"); --override-generation-config is laid over it (generate and serve).
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

TEST(GenerationConfigCli, ModelDefaultsFillOnlyTheFlagsNotGiven) {
    const fs::path dir = fs::temp_directory_path() / ("taco_generation_config_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(testing_util::golden_model_dir("llama"), dir, fs::copy_options::recursive);
    // top_k 1: greedy whatever the seed; max_new_tokens 3: the default length.
    std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 2}, {"top_k", 1}, {"max_new_tokens", 3}};
    const std::string base = "generate " + dir.string() + " --prompt-ids 1,17,42,99 --ignore-eos --json";

    const std::vector<int32_t> greedy = generated_token_ids(base + " --temperature 0 --max-tokens 6");
    ASSERT_EQ(greedy.size(), 6u);
    EXPECT_EQ(generated_token_ids(base + " --seed 5"), std::vector<int32_t>(greedy.begin(), greedy.begin() + 3));
    EXPECT_EQ(generated_token_ids(base + " --seed 5 --max-tokens 6"), greedy);  // a flag beats the file
    EXPECT_EQ(generated_token_ids(base + " --generation-config vllm").size(), 16u);
    auto bad = run_taco(base + " --generation-config " + (dir / "nope").string());
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("expected 'auto', 'vllm' or a folder"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

// --override-generation-config: its keys replace the file's ("auto") or are the only defaults ("vllm"); a flag of
// the request still wins.
TEST(GenerationConfigCli, OverridesAreLaidOverTheFileOrUsedAloneAndFlagsStillWin) {
    const fs::path dir = fs::temp_directory_path() / ("taco_override_generation_config_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(testing_util::golden_model_dir("llama"), dir, fs::copy_options::recursive);
    std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 2}, {"top_k", 1}, {"max_new_tokens", 3}};
    const std::string base = "generate " + dir.string() + " --prompt-ids 1,17,42,99 --ignore-eos --json --seed 5";
    const std::vector<int32_t> greedy = generated_token_ids(base + " --temperature 0 --max-tokens 6");
    ASSERT_EQ(greedy.size(), 6u);
    auto first = [&](size_t n) { return std::vector<int32_t>(greedy.begin(), greedy.begin() + n); };
    // auto: max_new_tokens 5 replaces the file's 3, the file's top_k 1 stays (greedy whatever the seed).
    EXPECT_EQ(generated_token_ids(base + " --override-generation-config '{\"max_new_tokens\": 5}'"), first(5));
    EXPECT_EQ(generated_token_ids(base + " --override-generation-config '{\"max_new_tokens\": 5}' --max-tokens 2"),
              first(2));
    // vllm: the file is ignored, the overrides alone are the defaults.
    EXPECT_EQ(
        generated_token_ids(base + " --generation-config vllm --override-generation-config '{\"max_new_tokens\": 4, "
                                   "\"top_k\": 1}'"),
        first(4));
    EXPECT_EQ(
        generated_token_ids(base + " --generation-config vllm --override-generation-config '{\"top_k\": 1}'").size(),
        16u);
    EXPECT_EQ(generated_token_ids(base + " --generation-config vllm --override-generation-config '{\"top_k\": 1, "
                                         "\"max_new_tokens\": 4}' --max-tokens 6"),
              greedy);
    auto bad = run_taco(base + " --override-generation-config '{\"temprature\": 0.5}'");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--override-generation-config: 'temprature' is not a key"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

// serve: the defaults it logs at start are the file's with the overrides laid over them (the run stops at the port,
// the last check, after the server has taken its defaults).
TEST(GenerationConfigCli, ServeLaysTheOverridesOverTheModelsDefaults) {
    const std::string overrides = " --override-generation-config '{\"temperature\": 0.2, \"max_new_tokens\": 12}'";
    auto r = run_taco("serve models/demo --port -1" + overrides);  // the demo's file: temperature 0.7, top_p 0.9
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--override-generation-config: temperature=0.2, top_p=0.9, max_tokens=12"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--port -1 is out of range"), std::string::npos) << r.err;
    auto alone = run_taco("serve models/demo --port -1 --generation-config vllm" + overrides);
    EXPECT_NE(alone.err.find("--override-generation-config: temperature=0.2, max_tokens=12 "), std::string::npos)
        << alone.err;
}

TEST(GenerationConfigCli, BadOverridesStopServeAndGenerateNamingTheFlagAndKey) {
    auto refused = [](const std::string& args, const std::string& message) {
        auto r = run_taco(args);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    };
    for (const char* start : {"serve models/demo --port 0", "generate models/demo --prompt-ids 1"}) {
        const std::string command = start;
        refused(command + " --override-generation-config '{\"temperature\": 0.5'",
                "--override-generation-config is not valid JSON");
        refused(command + " --override-generation-config '[1]'", "--override-generation-config must be a JSON object");
        refused(command + " --override-generation-config '{\"do_sample\": true}'",
                "--override-generation-config: 'do_sample' is not a key");
        refused(command + " --override-generation-config '{\"top_k\": \"1\"}'",
                "--override-generation-config: 'top_k' must be an integer");
        refused(command + " --override-generation-config '{\"temperature\": -1}'",
                "--override-generation-config: temperature");
        refused(command + " --override-generation-config '{\"max_new_tokens\": 0}'",
                "--override-generation-config: 'max_new_tokens' must be at least 1");
    }
}

}  // namespace
}  // namespace taco
