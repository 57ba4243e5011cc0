#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace taco {

LogLevel log_level() {
    static const LogLevel level = [] {
        const char* env = std::getenv("TACO_LOG_LEVEL");
        if (env == nullptr) return LogLevel::kInfo;
        if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
        if (std::strcmp(env, "warn") == 0) return LogLevel::kWarn;
        if (std::strcmp(env, "error") == 0) return LogLevel::kError;
        return LogLevel::kInfo;
    }();
    return level;
}

void log_line(LogLevel level, std::string_view message) {
    static std::mutex mutex;
    const char* tag = level == LogLevel::kDebug  ? "debug"
                      : level == LogLevel::kInfo ? "info"
                      : level == LogLevel::kWarn ? "warn"
                                                 : "error";
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "[taco-llm %s] %.*s\n", tag, int(message.size()), message.data());
}

}  // namespace taco
