// The demo model (models/demo) through the CLI: greedy generation equals transformers' fp32 greedy
// continuation (tests/data/demo/greedy.json), and `taco_llm perplexity` prints what transformers computes.
#include <cmath>
#include <fstream>
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
