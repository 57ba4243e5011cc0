// Runs the built taco_llm binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace taco::testing_util {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// `args` is appended to the binary path as is (shell syntax); `stdin_text` is fed on standard input; `env` adds
// environment variables for this run only. The binary sees no GPU (CUDA_VISIBLE_DEVICES empty) unless `env` says.
CommandResult run_taco(const std::string& args, const std::string& stdin_text = "",
                       const std::vector<std::pair<std::string, std::string>>& env = {});

std::string golden_model_dir(const std::string& name);

// The token ids a `generate` command line prints (its JSON's token_ids); empty, with a test failure naming the
// command and its stderr, when it fails.
std::vector<int32_t> generated_token_ids(const std::string& args);

}  // namespace taco::testing_util
