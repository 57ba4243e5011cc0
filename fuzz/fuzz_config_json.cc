// config.json: ModelConfig::from_json on any JSON (sizes are bounded before anything is sized from them), and the
// context length derived from it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json_util.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto json = taco::parse_json(std::string_view(reinterpret_cast<const char*>(data), size));
    if (!json.is_ok()) return 0;
    auto config = taco::ModelConfig::from_json(*json, "config.json");
    if (config.is_ok()) (void)config->derived_max_model_len();
    return 0;
}
