// Normalizers of tokenizer.json ("normalizer"): string -> string transforms applied to each piece of input that
// is not an added token, before pre-tokenization.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual std::string normalize(std::string_view text) const = 0;
};

// Builds the normalizer a tokenizer.json "normalizer" object describes (null -> nullptr). Errors name the
// unknown type or the bad field.
Result<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j);

}  // namespace taco
