// Post-processors of tokenizer.json ("post_processor"): add the special tokens of a single sequence
// (TemplateProcessing and friends) when add_special_tokens is set. Pair sequences are not supported.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco {

class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};

// Builds the post-processor a tokenizer.json "post_processor" object describes (null -> nullptr). Errors name
// the unknown type or the bad field.
Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j);

// The TemplateProcessing transformers installs for add_bos_token / add_eos_token: `prefix` ids, the sequence,
// `suffix` ids.
std::unique_ptr<PostProcessor> make_bos_eos_post_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix);

}  // namespace taco
