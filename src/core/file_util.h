// Small file helpers shared by io/, model/ and tokenizer/: whole-file reads and JSON parsing that report
// the path in every error.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace taco {

Result<std::string> read_text_file(const std::string& path);
// Parses a JSON file; an error names the file and the parser's position.
Result<nlohmann::json> read_json_file(const std::string& path);
bool file_exists(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace taco
