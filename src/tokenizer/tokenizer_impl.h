// Internal: the pipeline a Tokenizer runs, filled by the loaders (tokenizer_loader.cc, sentencepiece_model.cc).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/decoders.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processors.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"

namespace taco {

struct Tokenizer::Impl {
    std::unique_ptr<Normalizer> normalizer;       // may be null
    std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
    std::unique_ptr<Model> model;
    std::unique_ptr<PostProcessor> post_processor;  // may be null
    std::unique_ptr<TokenDecoder> decoder;          // may be null: tokens joined with ' '
    AddedVocabulary added;
    std::optional<int32_t> bos_id, eos_id;
    bool clean_up_tokenization_spaces = false;  // applied by decode (transformers skips it for BPE models)
};

// Applies tokenizer_config.json (may be null) to a pipeline built from tokenizer.json / vocab files: bos/eos,
// named special tokens, add_bos_token / add_eos_token, clean_up_tokenization_spaces.
Status apply_tokenizer_config(Tokenizer::Impl& impl, const nlohmann::json& config);

// Pipelines for folders without tokenizer.json.
Result<std::unique_ptr<Tokenizer::Impl>> load_vocab_merges(const std::string& vocab_path,
                                                           const std::string& merges_path);
Result<std::unique_ptr<Tokenizer::Impl>> load_sentencepiece(const std::string& model_path);

}  // namespace taco
