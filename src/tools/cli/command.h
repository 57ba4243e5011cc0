// Subcommands of `taco_llm` register themselves: each cmd_*.cc file defines one static CommandRegistrar, so a
// new subcommand is one new file and main.cc never changes. The CLI layer parses arguments and nothing else.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace taco::cli {

// Adds a subcommand to `app`; the subcommand's callback does the work and returns an exit code through
// CLI::RuntimeError on failure (after printing the error to stderr).
using CommandSetup = std::function<void(CLI::App& app)>;

struct CommandRegistrar {
    CommandRegistrar(int order, CommandSetup setup);
};

// In the order given (so `--help` lists them in a stable order).
std::vector<CommandSetup> registered_commands();

// The `bench` subcommand that the benchmark files (cmd_bench_*.cc) add their workloads under, created by the
// first of them to register.
CLI::App* bench_subcommand(CLI::App& app);

// Prints "error: <message>" to stderr and throws CLI::RuntimeError(exit_code).
[[noreturn]] void fail(const std::string& message, int exit_code = 1);

}  // namespace taco::cli
