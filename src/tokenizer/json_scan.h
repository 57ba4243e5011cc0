// Fast path for large tokenizer.json files: model.vocab and model.merges (hundreds of thousands of entries) are
// read by a small dedicated scanner instead of a JSON DOM, and the rest of the file (a few KB to a few MB) is
// handed to nlohmann with those two values emptied. Keeps loading a 128k-token vocabulary well under 200 ms.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace taco {

struct ScannedTokenizerJson {
    std::string rest;  // the file with model.vocab replaced by {} and model.merges by [] (when they were found)
    bool has_vocab = false;
    bool has_merges = false;
    std::vector<std::pair<std::string, int32_t>> vocab;       // model.vocab when it is an object token -> id
    std::vector<std::pair<std::string, std::string>> merges;  // model.merges ("a b" strings or [a, b] pairs)
};

// Errors name the byte offset and what was expected. A model.vocab that is not an object of integers (Unigram's
// list of [token, score]) is left in `rest` untouched.
Result<ScannedTokenizerJson> scan_tokenizer_json(std::string_view text);

}  // namespace taco
