// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): split each piece of normalized text that is not an added
// token into the words the model tokenizes separately (and, for ByteLevel, map bytes to printable characters).
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/split_pattern.h"

namespace taco {

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces `pieces` by their splits; pieces with added_id >= 0 pass through unchanged, empty pieces vanish.
    void pre_tokenize(std::vector<TextPiece>& pieces) const;

protected:
    // Splits one piece (never an added token), appending the results to `out`.
    virtual void split(TextPiece&& piece, std::vector<TextPiece>& out) const = 0;
    friend class SequencePreTokenizer;
};

// Builds the pre-tokenizer a tokenizer.json "pre_tokenizer" object describes (null -> nullptr). Errors name the
// unknown type or the bad field.
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j);

// The Metaspace pre-tokenizer with these settings (the transformers Llama/Gemma classes build their own).
enum class PrependScheme { kAlways, kFirst, kNever };
std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(const std::string& replacement, PrependScheme scheme,
                                                           bool split);

}  // namespace taco
