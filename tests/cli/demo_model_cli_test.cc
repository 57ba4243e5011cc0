// The demo model (models/demo) through the CLI: greedy generation equals transformers' fp32 greedy
// continuation (tests/data/demo/greedy.json), and `taco_llm perplexity` prints what transformers computes.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace taco {
namespace {

using testing_util::golden_model_dir;
using testing_util::run_taco;

const std::string kDemo = std::string(TACO_SOURCE_DIR) + "/models/demo";
const std::string kSample = std::string(TACO_SOURCE_DIR) + "/tests/data/demo/heldout_sample.txt";

nlohmann::json read_json(const std::string& relative) {
    std::ifstream in(std::string(TACO_SOURCE_DIR) + "/" + relative);
    return nlohmann::json::parse(in);
}

std::string ids_arg(const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

TEST(DemoModelCli, GreedyGenerationEqualsTransformersIncludingTheEosToken) {
    const nlohmann::json golden = read_json("tests/data/demo/greedy.json");
    ASSERT_EQ(golden["cases"].size(), 3u);
    for (const auto& c : golden["cases"]) {
        const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
        const auto expected = c["output_ids"].get<std::vector<int32_t>>();
        auto r = run_taco("generate " + kDemo + " --prompt-ids " + ids_arg(prompt) +
                          " --max-tokens 24 --temperature 0 --json --device cpu");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        auto out = nlohmann::json::parse(r.out);
        EXPECT_EQ(out["token_ids"].get<std::vector<int32_t>>(), expected) << c["prompt"].dump();
        // transformers stops at an eos id of generation_config (2 <|im_end|>, 0 <|endoftext|>) and keeps it.
        const bool ended = !expected.empty() && (expected.back() == 2 || expected.back() == 0);
        EXPECT_EQ(out["finish_reason"], ended ? "stop" : "length") << c["prompt"].dump();
    }
}

TEST(DemoModelCli, ChatAnswerEndsWithImEnd) {
    // "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n" as the chat template renders it: the model
    // was trained to answer a greeting and end its turn with <|im_end|> (id 2).
    auto r = run_taco("generate " + kDemo +
                      " --prompt-ids 1,463,201,4346,2,201,1,465,201 --max-tokens 64 --temperature 0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["finish_reason"], "stop") << r.out;
    EXPECT_EQ(out["token_ids"].back(), 2) << r.out;
}

TEST(DemoModelCli, GenerateWithoutAModelUsesTheBuiltInDemoModel) {
    const std::string flags = " --prompt \"LOVE, n.\" --max-tokens 12 --temperature 0 --json";
    auto implicit = run_taco("generate" + flags);
    ASSERT_EQ(implicit.exit_code, 0) << implicit.err;
    auto explicit_dir = run_taco("generate " + kDemo + flags);
    ASSERT_EQ(explicit_dir.exit_code, 0) << explicit_dir.err;
    EXPECT_EQ(nlohmann::json::parse(implicit.out)["token_ids"], nlohmann::json::parse(explicit_dir.out)["token_ids"]);
    EXPECT_EQ(nlohmann::json::parse(implicit.out)["token_ids"].size(), 12u);
}

TEST(DemoModelCli, TacoLlmDemoModelOverridesWhereTheDemoModelIsFound) {
    auto r = run_taco("generate --prompt-ids 5,6 --max-tokens 2 --json", "",
                      {{"TACO_LLM_DEMO_MODEL", golden_model_dir("llama")}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"].size(), 2u);
    auto missing = run_taco("generate --prompt-ids 5,6 --json", "", {{"TACO_LLM_DEMO_MODEL", "/nonexistent/demo"}});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("/nonexistent/demo is not a model folder"), std::string::npos) << missing.err;
}

// Runs a copy of taco_llm at `binary` (the demo model is found from where the binary is, /proc/self/exe).
testing_util::CommandResult run_copy(const std::string& binary, const std::string& args) {
    const std::string out = binary + ".out", err = binary + ".err";
    const std::string command = "CUDA_VISIBLE_DEVICES='' " + binary + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(command.c_str());
    std::ifstream out_in(out), err_in(err);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(out_in), {}),
            std::string(std::istreambuf_iterator<char>(err_in), {})};
}

// Plain `cmake -B build` puts the binary one folder below the tree (build/taco_llm), a preset two
// (build/<preset>/taco_llm), and a build folder may be outside the tree altogether: the demo model is the nearest
// models/demo above the binary, else the source tree's.
TEST(DemoModelCli, TheDemoModelIsFoundWhereverTheBinaryIsBuilt) {
    namespace fs = std::filesystem;
    const fs::path root = fs::path(::testing::TempDir()) / ("taco_demo_lookup_" + std::to_string(getpid()));
    fs::remove_all(root);
    const fs::path in_tree = root / "tree" / "build" / "taco_llm", outside = root / "elsewhere" / "bin" / "taco_llm";
    for (const fs::path& copy : {in_tree, outside}) {
        fs::create_directories(copy.parent_path());
        fs::copy_file(fs::path(TACO_BINARY_DIR) / "taco_llm", copy);
    }
    // The tree's models/demo is another model here, so that the test sees which folder was taken.
    fs::create_directories(root / "tree" / "models");
    fs::create_directory_symlink(golden_model_dir("llama"), root / "tree" / "models" / "demo");
    const std::string flags = "generate --prompt-ids 5,6,7 --max-tokens 4 --temperature 0 --json";

    auto llama = run_taco("generate " + golden_model_dir("llama") +
                          " --prompt-ids 5,6,7 --max-tokens 4 "
                          "--temperature 0 --json");
    auto demo = run_taco("generate " + kDemo + " --prompt-ids 5,6,7 --max-tokens 4 --temperature 0 --json");
    ASSERT_EQ(llama.exit_code, 0) << llama.err;
    ASSERT_EQ(demo.exit_code, 0) << demo.err;
    auto from_tree = run_copy(in_tree.string(), flags);
    ASSERT_EQ(from_tree.exit_code, 0) << from_tree.err;
    EXPECT_EQ(nlohmann::json::parse(from_tree.out)["token_ids"], nlohmann::json::parse(llama.out)["token_ids"]);
    auto from_outside = run_copy(outside.string(), flags);
    ASSERT_EQ(from_outside.exit_code, 0) << from_outside.err;
    EXPECT_EQ(nlohmann::json::parse(from_outside.out)["token_ids"], nlohmann::json::parse(demo.out)["token_ids"]);
    fs::remove_all(root);
}

TEST(DemoModelCli, PerplexityPrintsTokensAndPerplexityWithinHalfAPercentOfTransformers) {
    const auto golden = read_json("tests/data/demo/perplexity.json");
    const auto& c = golden["cases"][1];
    auto r = run_taco("perplexity " + kDemo + " --text-file " + kSample + " --window " +
                      std::to_string(c["window"].get<int>()) + " --stride " + std::to_string(c["stride"].get<int>()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r.out, m, std::regex(R"(tokens (\d+) perplexity ([0-9.]+)\n)"))) << r.out;
    EXPECT_EQ(std::stoll(m[1]), c["tokens"].get<int64_t>());
    EXPECT_LT(std::abs(std::stod(m[2]) / c["perplexity"].get<double>() - 1), 0.005) << r.out;
}

TEST(DemoModelCli, PerplexityJsonReportsWindowStrideAndScoredTokens) {
    const auto golden = read_json("tests/data/demo/perplexity.json");
    const auto& c = golden["cases"][0];
    auto r = run_taco("perplexity " + kDemo + " --text-file " + kSample + " --window 128 --stride 64 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["window"], 128);
    EXPECT_EQ(out["stride"], 64);
    EXPECT_EQ(out["tokens"], c["tokens"]);
    EXPECT_EQ(out["scored_tokens"], c["scored_tokens"]);
    EXPECT_LT(std::abs(out["perplexity"].get<double>() / c["perplexity"].get<double>() - 1), 0.005) << r.out;
}

TEST(DemoModelCli, PerplexityErrorsNameTheProblem) {
    auto missing = run_taco("perplexity " + kDemo + " --text-file /nonexistent/text.txt");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("/nonexistent/text.txt"), std::string::npos) << missing.err;
    auto window = run_taco("perplexity " + kDemo + " --text-file " + kSample + " --window 4096");
    EXPECT_EQ(window.exit_code, 1);
    EXPECT_NE(window.err.find("maximum length 1024"), std::string::npos) << window.err;
}

}  // namespace
}  // namespace taco
