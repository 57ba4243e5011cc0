// Minimal logging to stderr. Levels: TACO_LOG_LEVEL=debug|info|warn|error (default info).
#pragma once

#include <string_view>

#include <fmt/core.h>  // fmt::format of built-in types; files that need more include fmt/format.h

namespace taco {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel log_level();
void log_line(LogLevel level, std::string_view message);

template <class... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace taco
