// Remote-code families (config classes shipped with the checkpoint, not in transformers) name the common fields
// their own way: Qwen v1 (kv_channels, layer_norm_epsilon, rotary_emb_base, rotary_pct, seq_length, an
// intermediate_size twice the MLP width) and ChatGLM2/3 (num_layers, padded_vocab_size, ffn_hidden_size,
// kv_channels, multi_query_group_num, layernorm_epsilon, seq_length); Baichuan-13B / Baichuan2 give the context
// length as model_max_length. with_remote_code_keys() writes the
// standard keys ModelConfig reads from them, with the config class's defaults where transformers would apply
// them; the family keys stay for the ArchSpec builders. Configs of other model types come back unchanged.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco {

// `source` names the file in errors (a required key missing, a key of the wrong type or an unsupported value).
Result<nlohmann::json> with_remote_code_keys(const nlohmann::json& config, const std::string& source);

}  // namespace taco
