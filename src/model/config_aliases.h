// GPT-style configs name the common fields their own way (GPT-2's n_embd / n_layer / n_head / n_positions /
// n_inner, OPT's ffn_dim, Falcon's n_head_kv / ffn_hidden_size, NeoX's rotary_pct, ...): transformers maps them
// with each config class's attribute_map and __init__ defaults. with_standard_keys() writes the standard keys
// ModelConfig reads (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, max_position_embeddings, rms_norm_eps (the LayerNorm epsilon too), hidden_act,
// partial_rotary_factor, rope_theta, tie_word_embeddings) from those, with the class's defaults, without
// overwriting a standard key the file already has. Configs of other model types come back unchanged.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco {

// `source` names the file in errors (a required key missing, a key of the wrong type).
Result<nlohmann::json> with_standard_keys(const nlohmann::json& config, const std::string& source);

}  // namespace taco
