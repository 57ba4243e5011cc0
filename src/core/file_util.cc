#include "core/file_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

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
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        return error("{}: invalid JSON: {}", path, e.what());
    }
}

bool file_exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

std::string join_path(const std::string& dir, const std::string& name) {
    return (std::filesystem::path(dir) / name).string();
}

}  // namespace taco
