#include "server/vllm_fields.h"

#include <fmt/format.h>

namespace taco::server {
namespace {

using json = nlohmann::json;

// null, false, 0, "" and empty arrays / objects: what a client sends for "not used".
bool neutral(const json& value) {
    if (value.is_null()) return true;
    if (value.is_boolean()) return !value.get<bool>();
    if (value.is_number()) return value.get<double>() == 0.0;
    if (value.is_string()) return value.get<std::string>().empty();
    if (value.is_array() || value.is_object()) return value.empty();
    return false;
}

struct Field {
    const char* name;
    const char* why;  // completes "'<name>' is not supported: <why>"
};

// vLLM's sampling and serving extras that change the output, in the order of its protocol definitions.
constexpr Field kFields[] = {
    {"logits_processors", "custom logits processors are Python code, which taco-llm does not run"},
};

}  // namespace

std::optional<UnimplementedField> unimplemented_vllm_field(const json& body) {
    if (!body.is_object()) return std::nullopt;
    for (const Field& f : kFields) {
        const auto it = body.find(f.name);
        if (it == body.end() || neutral(*it)) continue;
        return UnimplementedField{f.name, fmt::format("'{}' is not supported: {}", f.name, f.why)};
    }
    return std::nullopt;
}

}  // namespace taco::server
