#include "core/file_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_util.h"

namespace taco {

Result<std::string> read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return error("{}: cannot open file", path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return error("{}: read error", path);
    return buffer.str();
}

Result<nlohmann::json> read_json_file(const std::string& path) {
    TACO_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
    auto parsed = parse_json(text);
    if (!parsed) return parsed.status().with_context(path);
    return std::move(*parsed);
}

bool file_exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

std::string join_path(const std::string& dir, const std::string& name) {
    return (std::filesystem::path(dir) / name).string();
}

}  // namespace taco
