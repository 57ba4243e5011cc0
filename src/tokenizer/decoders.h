// Decoders of tokenizer.json ("decoder"): turn the token strings of a sequence of ids back into text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco {

// (Not "Decoder": that is the model's, model/decoder.h; two classes of one name in one namespace break the
// one-definition rule, and the linker then used one's destructor for the other: found by CI's ASan suites.)
class TokenDecoder {
public:
    virtual ~TokenDecoder() = default;
    // One step of the chain: tokens in, tokens out (tokenizers' decode_chain).
    virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
    // The whole decode: decode_chain, then concatenation.
    std::string decode(std::vector<std::string> tokens) const;
};

// Builds the decoder a tokenizer.json "decoder" object describes (null -> nullptr). Errors name the unknown
// type or the bad field.
Result<std::unique_ptr<TokenDecoder>> make_decoder(const nlohmann::json& j);

// transformers' clean_up_tokenization (" ." -> "." and friends).
std::string clean_up_tokenization(std::string text);

}  // namespace taco
