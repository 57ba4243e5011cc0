// `taco_llm tokenize` / `taco_llm detokenize`: one JSON value per stdin line, errors naming the line.
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "cli_runner.h"

namespace taco {
namespace {

using testing_util::run_taco;

const std::string kSpm = std::string(TACO_SOURCE_DIR) + "/tests/data/tokenizer/spm_bpe";

TEST(TokenizeCli, EncodesOneJsonStringPerLine) {
    auto r = run_taco("tokenize " + kSpm, "\"Hello world.\"\n\"\"\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[1,516,590,517,287,522,308,525,530,531]\n[1]\n");
    auto plain = run_taco("tokenize " + kSpm + " --no-special", "\"Hello world.\"\n");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, "[516,590,517,287,522,308,525,530,531]\n");
}

TEST(TokenizeCli, DecodesOneJsonArrayPerLine) {
    auto r = run_taco("detokenize " + kSpm, "[1,516,590,517,287,522,308,525,530,531]\n[]\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "\"<s> Hello world.\"\n\"\"\n");
    auto skip = run_taco("detokenize " + kSpm + " --skip-special-tokens", "[1,516,590,517,287,522,308,525,530,531]\n");
    ASSERT_EQ(skip.exit_code, 0) << skip.err;
    EXPECT_EQ(skip.out, "\"Hello world.\"\n");
}

TEST(TokenizeCli, BadLineFailsNamingTheLine) {
    auto r = run_taco("tokenize " + kSpm, "\"fine\"\nnot json\n");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
    auto d = run_taco("detokenize " + kSpm, "[1, -5]\n");
    EXPECT_NE(d.exit_code, 0);
    EXPECT_NE(d.err.find("line 1"), std::string::npos) << d.err;
}

TEST(TokenizeCli, MissingTokenizerFolderIsAnError) {
    auto r = run_taco("tokenize /nonexistent/tokenizer", "\"x\"\n");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("/nonexistent/tokenizer"), std::string::npos) << r.err;
}

TEST(TokenizeCli, DeeplyNestedStdinLineIsAnErrorNamingTheLimit) {
    const std::string deep = std::string(50000, '[') + std::string(50000, ']') + "\n";
    for (const auto& [command, first_line] :
         {std::pair{"detokenize ", "[1, 2]\n"}, std::pair{"tokenize ", "\"hi\"\n"}}) {
        auto r = run_taco(command + kSpm, first_line + deep);
        EXPECT_EQ(r.exit_code, 1) << command << r.err;
        EXPECT_NE(r.err.find("stdin line 2: JSON nested deeper than 128 levels"), std::string::npos) << r.err;
    }
    // Within the limit, the offending value is quoted depth-limited.
    auto r = run_taco("detokenize " + kSpm, "[1, " + std::string(100, '[') + std::string(101, ']') + "\n");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("stdin line 1: [[[[[...]]]]] is not a token id"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace taco
