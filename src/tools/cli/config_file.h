// vLLM's `--config FILE.yaml`: a flat YAML map of flags, each key a flag name without its dashes (underscores or
// dashes), each value a scalar, a list or a boolean:
//   max_model_len: 4096          -> --max-model-len=4096
//   enable-prefix-caching: false -> --no-enable-prefix-caching (a flag: true gives it, false its negation or nothing)
//   api-key: [k1, k2]            -> --api-key=k1 --api-key=k2 (an option that takes several values)
//   allowed-origins: ["*"]       -> --allowed-origins='["*"]' (a list or map for a one-value flag: its JSON)
// Flags given on the command line win: the file's value for them is dropped.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace taco::cli {

// `args` (the whole command line, argv[0] first) with each `--config FILE` / `--config=FILE` after `command`'s name
// replaced by the file's flags, put after the command line's own (before a "--"). An unreadable or malformed file,
// a key that names no flag of `command` and a value of the wrong shape are errors naming the file and the key.
Result<std::vector<std::string>> expand_config_files(const CLI::App& command, std::vector<std::string> args);

}  // namespace taco::cli
