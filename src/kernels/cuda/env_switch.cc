#include "kernels/cuda/env_switch.h"

#include <string_view>

#include "core/check.h"

namespace taco::cuda {

bool env_switch(const char* name, const char* env_value, const char* what) {
    const std::string_view value = env_value == nullptr ? std::string_view() : std::string_view(env_value);
    if (value.empty() || value == "1") return true;
    if (value == "0") return false;
    TACO_CHECK_MSG(false, "{} is '{}': 1 (the default) or 0 turns {} on or off", name, value, what);
    return false;
}

bool env_opt_in(const char* name, const char* env_value, const char* what) {
    const std::string_view value = env_value == nullptr ? std::string_view() : std::string_view(env_value);
    if (value.empty() || value == "0") return false;
    if (value == "1") return true;
    TACO_CHECK_MSG(false, "{} is '{}': 1 turns {} on, 0 (the default) off", name, value, what);
    return false;
}

int env_override(const char* name, const char* env_value, const char* what) {
    const std::string_view value = env_value == nullptr ? std::string_view() : std::string_view(env_value);
    if (value.empty()) return -1;
    if (value == "1") return 1;
    if (value == "0") return 0;
    TACO_CHECK_MSG(false, "{} is '{}': unset lets the backend choose {}; 1 forces it everywhere, 0 nowhere", name,
                   value, what);
    return -1;
}

}  // namespace taco::cuda
