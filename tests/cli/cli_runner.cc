#include "cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace taco::testing_util {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

}  // namespace

std::string golden_model_dir(const std::string& name) {
    return std::string(TACO_SOURCE_DIR) + "/tests/data/models/" + name;
}

CommandResult run_taco(const std::string& args, const std::string& stdin_text,
                       const std::vector<std::pair<std::string, std::string>>& env) {
    static std::atomic<int> counter{0};
    const std::string base =
        ::testing::TempDir() + "/taco_cli_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    std::ofstream(base + ".in", std::ios::binary) << stdin_text;
    // The CLI tests hold the CPU backend to the goldens: the binary sees no GPU (--device auto is the CPU there,
    // --device cuda an error) unless a test sets CUDA_VISIBLE_DEVICES itself.
    std::string env_prefix = "CUDA_VISIBLE_DEVICES='' ";
    for (const auto& [name, value] : env) env_prefix += name + "='" + value + "' ";
    const std::string command = env_prefix + std::string(TACO_BINARY_DIR) + "/taco_llm " + args + " <" + base +
                                ".in >" + base + ".out 2>" + base + ".err";
    int status = std::system(command.c_str());
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(base + ".out");
    result.err = slurp(base + ".err");
    return result;
}

std::vector<int32_t> generated_token_ids(const std::string& args) {
    CommandResult r = run_taco(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    if (r.exit_code != 0) return {};
    return nlohmann::json::parse(r.out)["token_ids"].get<std::vector<int32_t>>();
}

}  // namespace taco::testing_util
