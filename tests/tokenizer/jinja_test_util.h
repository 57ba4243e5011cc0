// Shared helpers for the Jinja and chat-template tests: reading JSONL goldens from tests/data and pinning the
// clock/time zone that strftime_now() reads to the instant the goldens were made with.
#pragma once

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace taco::testing {

// tools/make_chat_goldens.py freezes datetime.now() at 2026-01-15 12:00:00; this is that instant in UTC.
constexpr int64_t kGoldenEpochSeconds = 1768478400;

inline void use_utc_time_zone() {
    setenv("TZ", "UTC", 1);
    tzset();
}

inline std::string data_path(const std::string& relative) {
    return std::string(TACO_SOURCE_DIR) + "/tests/data/" + relative;
}

inline std::vector<nlohmann::ordered_json> read_jsonl(const std::string& path) {
    std::vector<nlohmann::ordered_json> lines;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) lines.push_back(nlohmann::ordered_json::parse(line));
    }
    return lines;
}

inline nlohmann::ordered_json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::ordered_json::parse(in);
}

}  // namespace taco::testing
