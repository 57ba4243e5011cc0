// `taco_llm generate` end to end (greedy parity with transformers, seeded sampling, prompt files), and its errors.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace taco {
namespace {

using testing_util::golden_model_dir;
using testing_util::run_taco;

std::string ids_arg(const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

TEST(GenerateCli, GreedyJsonEqualsTransformersOnEveryFamily) {
    for (const char* name : {"llama", "mistral", "qwen2", "llama_sharded"}) {
        std::ifstream in(golden_model_dir(name) + "/golden.json");
        auto golden = nlohmann::json::parse(in);
        for (const auto& c : golden["cases"]) {
            auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
            auto r = run_taco("generate " + golden_model_dir(name) + " --prompt-ids " + ids_arg(prompt) +
                              " --max-tokens 24 --min-tokens 24 --temperature 0 --json --device cpu");
            ASSERT_EQ(r.exit_code, 0) << r.err;
            auto out = nlohmann::json::parse(r.out);
            EXPECT_EQ(out["prompt_ids"].get<std::vector<int32_t>>(), prompt);
            EXPECT_EQ(out["token_ids"].get<std::vector<int32_t>>(), c["greedy_ids"].get<std::vector<int32_t>>())
                << name;
            EXPECT_EQ(out["finish_reason"], "length");
        }
    }
}

TEST(GenerateCli, SeededSamplingIsReproducible) {
    const std::string args =
        "generate " + golden_model_dir("llama") +
        " --prompt-ids 1,2,3 --max-tokens 10 --temperature 0.8 --top-p 0.9 --top-k 50 --seed 7 --json";
    auto a = run_taco(args), b = run_taco(args);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    auto c = run_taco("generate " + golden_model_dir("llama") +
                      " --prompt-ids 1,2,3 --max-tokens 10 --temperature 0.8 --seed 8 --json");
    EXPECT_NE(a.out, c.out);
}

TEST(GenerateCli, ErrorsGoToStderrWithNonZeroExit) {
    struct Case {
        std::string args;
        std::string message;
    };
    const std::string llama = golden_model_dir("llama");
    for (const Case& c : std::vector<Case>{
             {"generate /nonexistent/model --prompt-ids 1", "/nonexistent/model: no such model folder"},
             {"generate " + llama + " --prompt-ids 1,x,3", "'x' is not a token id"},
             {"generate " + llama + " --prompt-ids 1,99999", "outside the vocabulary"},
             {"generate " + llama + " --prompt-ids 1 --max-tokens 500", "maximum context length is 128 tokens"},
             {"generate " + llama + " --prompt-ids 1 --top-p 2", "top_p must be in (0, 1]"},
             {"generate " + llama, "one of --prompt, --prompt-ids or --prompts-file is required"},
         }) {
        auto r = run_taco(c.args);
        EXPECT_NE(r.exit_code, 0) << c.args;
        EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
    }
}

}  // namespace
}  // namespace taco

namespace taco {
namespace {

// A golden model with the small SentencePiece test tokenizer beside it (its ids fit the model's vocabulary).
std::string model_with_tokenizer() {
    namespace fs = std::filesystem;
    fs::path dir = fs::path(::testing::TempDir()) / "taco_cli_model_with_tokenizer";
    fs::remove_all(dir);
    fs::copy(testing_util::golden_model_dir("llama"), dir, fs::copy_options::recursive);
    const std::string spm = std::string(TACO_SOURCE_DIR) + "/tests/data/tokenizer/spm_bpe";
    for (const char* f : {"tokenizer.model", "tokenizer_config.json"}) fs::copy_file(spm + "/" + f, dir / f);
    return dir.string();
}

TEST(GenerateCli, PromptTextIsTokenizedAndOutputDetokenized) {
    const std::string dir = model_with_tokenizer();
    auto r = run_taco("generate " + dir + " --prompt 'God said' --max-tokens 12 --temperature 0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out = nlohmann::json::parse(r.out);
    // The same ids and text as the tokenize / detokenize commands give.
    auto tok = run_taco("tokenize " + dir, "\"God said\"\n");
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    EXPECT_EQ(out["prompt_ids"], nlohmann::json::parse(tok.out));
    auto detok = run_taco("detokenize " + dir + " --skip-special-tokens", out["token_ids"].dump() + "\n");
    ASSERT_EQ(detok.exit_code, 0) << detok.err;
    EXPECT_EQ(out["text"], nlohmann::json::parse(detok.out));
    EXPECT_EQ(out["token_ids"].size(), 12u);
}

TEST(GenerateCli, PromptTextWithoutATokenizerIsAClearError) {
    auto r = run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompt hello");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("no tokenizer"), std::string::npos) << r.err;
    auto ids_only = run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompt-ids 1,2 --json");
    EXPECT_TRUE(nlohmann::json::parse(ids_only.out)["text"].is_null());
}

}  // namespace
}  // namespace taco

namespace taco {
namespace {

TEST(GenerateCli, PromptsFileRunsTogetherAndPrintsInInputOrder) {
    std::ifstream in(testing_util::golden_model_dir("qwen2") + "/golden.json");
    auto golden = nlohmann::json::parse(in);
    const std::string path = ::testing::TempDir() + "/taco_prompts.jsonl";
    {
        std::ofstream out(path);
        for (const auto& c : golden["cases"])
            out << nlohmann::json({{"prompt_ids", c["prompt_ids"]}, {"max_tokens", 24}, {"min_tokens", 24}}).dump()
                << "\n";
        out << "\n"
            << R"({"prompt_ids": [5, 6, 7], "max_tokens": 3, "temperature": 0.9, "seed": 1, "n": 2})"
            << "\n";
    }
    auto r = run_taco("generate " + testing_util::golden_model_dir("qwen2") + " --prompts-file " + path +
                      " --temperature 0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    size_t i = 0;
    while (std::getline(lines, line)) {
        auto out = nlohmann::json::parse(line);
        if (i < golden["cases"].size()) {
            EXPECT_EQ(out["token_ids"], golden["cases"][i]["greedy_ids"]) << "line " << i;
        } else {
            EXPECT_EQ(out["outputs"].size(), 2u);
            EXPECT_EQ(out["outputs"][1]["token_ids"].size(), 3u);
        }
        ++i;
    }
    EXPECT_EQ(i, golden["cases"].size() + 1);
}

TEST(GenerateCli, MalformedPromptsFileNamesTheLine) {
    const std::string path = ::testing::TempDir() + "/taco_bad_prompts.jsonl";
    std::ofstream(path) << R"({"prompt_ids": [1, 2]})"
                        << "\n"
                        << R"({"prompt_ids": [1, 2], "top_p": "x"})"
                        << "\n";
    auto r = run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompts-file " + path);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(":2: 'top_p' must be a number"), std::string::npos) << r.err;
    std::ofstream(path) << R"({"prompt_ids": [1, 2], "colour": "blue"})"
                        << "\n";
    r = run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompts-file " + path);
    EXPECT_NE(r.err.find(":1: unknown field 'colour'"), std::string::npos) << r.err;
}

TEST(GenerateCli, DeeplyNestedPromptsFileLineIsAnErrorNamingTheLimit) {
    const std::string path = ::testing::TempDir() + "/taco_deep_prompts.jsonl";
    std::ofstream(path) << R"({"prompt_ids": [1, 2], "stop": )" << std::string(50000, '[') << std::string(50000, ']')
                        << "}\n";
    auto r = run_taco("generate " + testing_util::golden_model_dir("llama") + " --prompts-file " + path);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(":1: JSON nested deeper than 128 levels"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace taco
