// `taco_llm generate --generation-config`: the model's generation_config.json fills the sampling flags that are
// not given ("auto"), or is ignored ("vllm").
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
using testing_util::run_taco;

std::vector<int32_t> generated(const std::string& args) {
    auto r = run_taco(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return {};
    return json::parse(r.out)["token_ids"].get<std::vector<int32_t>>();
}

TEST(GenerationConfigCli, ModelDefaultsFillOnlyTheFlagsNotGiven) {
    const fs::path dir = fs::temp_directory_path() / ("taco_generation_config_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(testing_util::golden_model_dir("llama"), dir, fs::copy_options::recursive);
    // top_k 1: greedy whatever the seed; max_new_tokens 3: the default length.
    std::ofstream(dir / "generation_config.json") << json{{"eos_token_id", 2}, {"top_k", 1}, {"max_new_tokens", 3}};
    const std::string base = "generate " + dir.string() + " --prompt-ids 1,17,42,99 --ignore-eos --json";

    const std::vector<int32_t> greedy = generated(base + " --temperature 0 --max-tokens 6");
    ASSERT_EQ(greedy.size(), 6u);
    EXPECT_EQ(generated(base + " --seed 5"), std::vector<int32_t>(greedy.begin(), greedy.begin() + 3));
    EXPECT_EQ(generated(base + " --seed 5 --max-tokens 6"), greedy);  // a flag beats the file
    EXPECT_EQ(generated(base + " --generation-config vllm").size(), 16u);
    auto bad = run_taco(base + " --generation-config " + (dir / "nope").string());
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("expected 'auto', 'vllm' or a folder"), std::string::npos) << bad.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace taco
