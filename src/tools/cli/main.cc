#include <cstdio>

#include "tools/cli/command.h"
#include "tools/cli/config_file.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace taco::cli {
namespace {

std::vector<std::pair<int, CommandSetup>>& command_table() {
    static std::vector<std::pair<int, CommandSetup>> table;
    return table;
}

}  // namespace

CommandRegistrar::CommandRegistrar(int order, CommandSetup setup) {
    command_table().emplace_back(order, std::move(setup));
}

std::vector<CommandSetup> registered_commands() {
    auto table = command_table();
    std::stable_sort(table.begin(), table.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<CommandSetup> out;
    for (auto& [order, setup] : table) out.push_back(setup);
    return out;
}

CLI::App* bench_subcommand(CLI::App& app) {
    for (CLI::App* sub : app.get_subcommands({}))
        if (sub->get_name() == "bench") return sub;
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    return bench;
}

void fail(const std::string& message, int exit_code) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    throw CLI::RuntimeError(exit_code);
}

}  // namespace taco::cli

namespace {

// vLLM spells --tensor-parallel-size also `-tp`, a multi-letter single-dash option that CLI11 cannot declare: it
// is rewritten before parsing ("-tp N" and "-tp=N"). vLLM (argparse) also takes every long flag with underscores
// (--max_model_len): a flag's name, up to any '=', has its underscores turned into dashes. Arguments after "--"
// are left alone.
std::vector<std::string> rewrite_vllm_short_options(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
        if (args[i].rfind("--", 0) == 0) {
            const size_t name_end = std::min(args[i].find('='), args[i].size());
            std::replace(args[i].begin() + 2, args[i].begin() + std::ptrdiff_t(name_end), '_', '-');
        }
        if (args[i] == "-tp")
            args[i] = "--tensor-parallel-size";
        else if (args[i].rfind("-tp=", 0) == 0)
            args[i] = "--tensor-parallel-size=" + args[i].substr(4);
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"taco-llm: serve and run large language models"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "taco-llm 0.1.0");
    for (const auto& setup : taco::cli::registered_commands()) setup(app);
    std::vector<std::string> args = rewrite_vllm_short_options(argc, argv);
    // vLLM's --config FILE.yaml, for the commands that declare it.
    for (CLI::App* command : app.get_subcommands({})) {
        if (!command->get_option_no_throw("--config")) continue;
        auto expanded = taco::cli::expand_config_files(*command, args);
        if (!expanded) {
            std::fprintf(stderr, "error: %s\n", expanded.status().message().c_str());
            return 1;
        }
        args = std::move(*expanded);
    }
    std::vector<char*> arg_ptrs;
    for (std::string& arg : args) arg_ptrs.push_back(arg.data());
    CLI11_PARSE(app, int(arg_ptrs.size()), arg_ptrs.data());
    return 0;
}
