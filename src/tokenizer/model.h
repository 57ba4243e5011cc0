// The model stage of the pipeline: one pre-tokenized word -> token ids, plus the id <-> token maps of the base
// vocabulary (added tokens live in AddedVocabulary).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace taco {

class Model {
public:
    virtual ~Model() = default;
    // Appends the ids of `word` (non-empty) to `out`.
    virtual Status tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
    virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
    // nullptr when `id` is not in the base vocabulary.
    virtual const std::string* id_to_token(int32_t id) const = 0;
    virtual int32_t vocab_size() const = 0;  // number of entries of the base vocabulary
};

}  // namespace taco
