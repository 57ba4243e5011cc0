// Text <-> token ids, identical to Hugging Face tokenizers as transformers loads them. A Tokenizer is loaded
// once and is then immutable: encode/decode may be called from several threads at once.
//
// Pipeline of encode (tokenizer.json semantics): added tokens found in the raw text -> normalizer on the other
// pieces -> added tokens found in the normalized pieces -> pre-tokenizer -> model (BPE / SentencePiece) ->
// post-processor (special tokens, when add_special_tokens). tokenizer_config.json adds what transformers
// applies on top: add_bos_token / add_eos_token, bos/eos tokens, clean_up_tokenization_spaces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace taco {

class Tokenizer {
public:
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // DIR holds tokenizer.json (+ optional tokenizer_config.json), or vocab.json + merges.txt, or
    // tokenizer.model (SentencePiece). Errors name the file and what is wrong in it.
    static Result<std::unique_ptr<Tokenizer>> load(const std::string& dir);
    // From the text of a tokenizer.json and (optional, may be empty) tokenizer_config.json; `name` is used in
    // error messages.
    static Result<std::unique_ptr<Tokenizer>> from_json_text(const std::string& tokenizer_json,
                                                             const std::string& config_json,
                                                             const std::string& name = "tokenizer.json");

    // Error on invalid UTF-8 (naming the byte offset).
    Result<std::vector<int32_t>> encode(std::string_view text, bool add_special_tokens = true) const;
    // Unknown ids are skipped, as the tokenizers library does.
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

    int32_t vocab_size() const;  // including added tokens
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::optional<std::string> id_to_token(int32_t id) const;
    std::optional<int32_t> bos_token_id() const;
    std::optional<int32_t> eos_token_id() const;
    bool is_special(int32_t id) const;

    struct Impl;

private:
    // from_json_text's work; it may throw nlohmann::json::exception, which from_json_text turns into the error.
    static Result<std::unique_ptr<Tokenizer>> build_from_json_text(const std::string& tokenizer_json,
                                                                   const std::string& config_json,
                                                                   const std::string& name);
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace taco
