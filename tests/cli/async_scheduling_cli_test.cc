// --async-scheduling / --no-async-scheduling (vLLM's flag) and TACO_ASYNC_SCHEDULING: the outputs, stop strings
// included, are the same either way; a bad environment value is an error naming it.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli_runner.h"

namespace taco::testing_util {
namespace {

namespace fs = std::filesystem;

TEST(AsyncSchedulingCli, EitherWayGenerateGivesTheSameOutputs) {
    const fs::path prompts = fs::temp_directory_path() / ("taco_async_cli_" + std::to_string(::getpid()) + ".jsonl");
    std::ofstream(prompts)
        << R"({"prompt": "And the LORD said unto", "stop": [" the", ","], "max_tokens": 30, "temperature": 0})"
           "\n"
        << R"({"prompt": "Blessed are the", "stop": ["e s"], "max_tokens": 30, "temperature": 0.9, "seed": 3, "n": 2})"
           "\n"
        << R"({"prompt": "In the beginning", "max_tokens": 12, "ignore_eos": true, "temperature": 0})"
           "\n";
    const std::string base = "generate models/demo --json --prompts-file " + prompts.string();
    const CommandResult on = run_taco(base + " --async-scheduling");
    const CommandResult off = run_taco(base + " --no-async-scheduling");
    const CommandResult by_env = run_taco(base, "", {{"TACO_ASYNC_SCHEDULING", "1"}});
    ASSERT_EQ(on.exit_code, 0) << on.err;
    ASSERT_EQ(off.exit_code, 0) << off.err;
    ASSERT_EQ(by_env.exit_code, 0) << by_env.err;
    EXPECT_NE(off.out.find("\"stop_reason\""), std::string::npos) << off.out;
    EXPECT_EQ(on.out, off.out);
    EXPECT_EQ(by_env.out, off.out);
    fs::remove(prompts);
}

TEST(AsyncSchedulingCli, ABadEnvironmentValueIsAnErrorNamingIt) {
    const CommandResult r =
        run_taco("generate models/demo --prompt hi --max-tokens 2", "", {{"TACO_ASYNC_SCHEDULING", "yes"}});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("TACO_ASYNC_SCHEDULING=yes: expected 0 or 1"), std::string::npos) << r.err;
    // The flag decides, whatever the environment says.
    EXPECT_EQ(run_taco("generate models/demo --prompt hi --max-tokens 2 --no-async-scheduling", "",
                       {{"TACO_ASYNC_SCHEDULING", "yes"}})
                  .exit_code,
              0);
}

TEST(AsyncSchedulingCli, ServeHelpListsTheFlag) {
    const CommandResult r = run_taco("serve --help");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--async-scheduling"), std::string::npos);
    EXPECT_NE(r.out.find("--no-async-scheduling"), std::string::npos);
}

}  // namespace
}  // namespace taco::testing_util
