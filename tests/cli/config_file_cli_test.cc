// `taco_llm serve --config FILE.yaml`: vLLM's YAML file of flags. Each case ends at a check that refuses the server
// before it loads, so what the file said is seen in the error.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli_runner.h"

namespace taco::testing_util {
namespace {

namespace fs = std::filesystem;

// A YAML file holding `text` in a fresh temporary folder.
std::string yaml_file(const std::string& name, const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / ("taco_cli_config_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path path = dir / (name + ".yaml");
    std::ofstream(path) << text;
    return path.string();
}

void expect_refused(const std::string& args, const std::string& message) {
    CommandResult r = run_taco("serve models/demo --port 0 " + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
}

TEST(ConfigFileCli, KeysInEitherSpellingAreTheFlags) {
    expect_refused("--config " + yaml_file("underscore", "max_pending_requests: 0\n"),
                   "--max-pending-requests must be at least 1, got 0");
    expect_refused("--config=" + yaml_file("dash", "max-pending-requests: 0\n"),
                   "--max-pending-requests must be at least 1, got 0");
    // A boolean sets a flag; a list repeats a flag that takes several values; a map or list for a one-value flag is
    // its JSON.
    expect_refused("--config " + yaml_file("flag", "enable_auto_tool_choice: true\n"),
                   "--enable-auto-tool-choice needs --tool-call-parser");
    expect_refused("--config " + yaml_file("list", "api-key: [good, \"\"]\n"), "--api-key: an empty key");
    expect_refused("--config " + yaml_file("map", "structured_outputs_config: {backend: magic}\n"),
                   "backend 'magic' is unknown");
    expect_refused("--config " + yaml_file("json_list", "allowed_origins: [1]\n"),
                   "--allowed-origins must be a JSON list of strings, e.g. '[\"*\"]', got '[1]'");
    // false leaves a flag off (its --no- form where it has one): the later check still fails.
    expect_refused("--config " + yaml_file("off",
                                           "enable-lora: false\nenable_prefix_caching: false\n"
                                           "max_pending_requests: 0\n"),
                   "--max-pending-requests must be at least 1");
}

TEST(ConfigFileCli, PartialPrefillLimitsAreFlagsLikeAnyOther) {
    expect_refused("--config " + yaml_file("partial", "max_num_partial_prefills: 0\n"),
                   "--max-num-partial-prefills must be at least 1, got 0");
    expect_refused(
        "--config " + yaml_file("long_partial", "max_num_partial_prefills: 1\nmax-long-partial-prefills: 2\n"),
        "--max-long-partial-prefills (2) must be at most --max-num-partial-prefills (1)");
}

TEST(ConfigFileCli, TheCommandLineWinsOverTheFile) {
    const std::string file = yaml_file("wins", "max_pending_requests: 0\nshutdown_timeout: 5\n");
    // The file's 0 would be refused first: the command line's 3 is taken, and its NaN timeout is what is refused.
    expect_refused("--config " + file + " --max_pending_requests 3 --shutdown-timeout nan",
                   "--shutdown-timeout must be in [0, 86400]");
}

TEST(ConfigFileCli, AMalformedFileOrAnUnknownKeyIsAnErrorNamingIt) {
    const std::string bad_yaml = yaml_file("broken", "port: [1\n");
    expect_refused("--config " + bad_yaml, "--config " + bad_yaml + ": not valid YAML: line 2");
    const std::string unknown = yaml_file("unknown", "max_model_len: 64\nno_such_flag: 1\n");
    expect_refused("--config " + unknown, "unknown key 'no_such_flag' (no flag --no-such-flag of `serve`)");
    expect_refused("--config " + yaml_file("list_root", "- a\n- b\n"), "expected a map of flag names to values");
    expect_refused("--config " + yaml_file("flag_value", "enable_prefix_caching: maybe\n"),
                   "key 'enable_prefix_caching' is a flag: give true or false");
    expect_refused("--config " + yaml_file("nested", "config: other.yaml\n"), "unknown key 'config'");
    expect_refused("--config " + yaml_file("twice", "port: 1\nport: 2\n"), "key 'port' is given twice");
    expect_refused("--config /nonexistent/file.yaml", "--config /nonexistent/file.yaml: cannot read the file");
    expect_refused("--config", "--config needs a FILE.yaml");
}

}  // namespace
}  // namespace taco::testing_util
