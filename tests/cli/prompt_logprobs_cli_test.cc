// `taco_llm generate --prompts-file` with prompt_logprobs and max_tokens 0: offline scoring of prompts.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace taco {
namespace {

using json = nlohmann::json;

TEST(PromptLogprobsCli, PromptsFileScoresEachPromptToken) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("taco_prompt_logprobs_" + std::to_string(::getpid()) + ".jsonl"))
            .string();
    std::ofstream(path) << json{{"prompt_ids", {1, 17, 42, 99}}, {"prompt_logprobs", 2}, {"max_tokens", 0}}.dump()
                        << "\n"
                        << json{{"prompt_ids", {1, 5}}, {"max_tokens", 1}}.dump() << "\n";
    auto r = testing_util::run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompts-file " + path +
                                    " --json");
    std::filesystem::remove(path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string first, second;
    std::getline(lines, first);
    std::getline(lines, second);
    const json scored = json::parse(first);
    EXPECT_TRUE(scored["token_ids"].empty());
    EXPECT_EQ(scored["finish_reason"], "length");
    const json& lps = scored["prompt_logprobs"];
    ASSERT_EQ(lps.size(), 4u) << first;
    EXPECT_TRUE(lps[0].is_null());
    for (size_t i = 1; i < 4; ++i) {
        EXPECT_EQ(lps[i]["token"], scored["prompt_ids"][i]);
        EXPECT_LE(lps[i]["logprob"].get<double>(), 0.0);
        EXPECT_GE(lps[i]["rank"].get<int64_t>(), 1);
        EXPECT_EQ(lps[i]["top"].size(), 2u);
    }
    EXPECT_FALSE(json::parse(second).contains("prompt_logprobs"));  // not asked for
}

}  // namespace
}  // namespace taco
