#include <cstdio>

#include "tools/cli/command.h"

#include <algorithm>
#include <utility>

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

void fail(const std::string& message, int exit_code) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    throw CLI::RuntimeError(exit_code);
}

}  // namespace taco::cli

int main(int argc, char** argv) {
    CLI::App app{"taco-llm: serve and run large language models"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "taco-llm 0.1.0");
    for (const auto& setup : taco::cli::registered_commands()) setup(app);
    CLI11_PARSE(app, argc, argv);
    return 0;
}
