// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): split each piece of normalized text that is not an added
// token into the words the model tokenizes separately (and, for ByteLevel, map bytes to printable characters).
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/split_pattern.h"

namespace taco {

// Receives the words of a streaming pre-tokenization (views valid only during the call).
using WordSink = std::function<void(std::string_view word)>;

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Replaces `pieces` by their splits; pieces with added_id >= 0 pass through unchanged, empty pieces vanish.
    void pre_tokenize(std::vector<TextPiece>& pieces) const;

    // The same words as pre_tokenize gives for one piece, without building pieces (the encode hot path). Only
    // where can_stream(); `original_start` is the piece's offset in the input.
    virtual bool can_stream() const { return false; }
    virtual void stream(std::string_view text, size_t original_start, const WordSink& emit) const {}

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
