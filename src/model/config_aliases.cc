#include "model/config_aliases.h"

#include "core/json_util.h"

#include <cmath>

namespace taco {
namespace {

using json = nlohmann::json;

bool present(const json& config, const char* key) { return config.contains(key) && !config.at(key).is_null(); }

// Writes `key` from the first present alias, else from `fallback` (when not null); a standard key already in
// the file wins.
void alias(json& out, const char* key, std::initializer_list<const char*> aliases, const json& fallback = nullptr) {
    if (present(out, key)) return;
    for (const char* a : aliases) {
        if (present(out, a)) {
            out[key] = out[a];
            return;
        }
    }
    if (!fallback.is_null()) out[key] = fallback;
}

Result<int64_t> int_key(const json& config, const char* key, const std::string& source) {
    if (!present(config, key)) return error("{}: '{}' is required", source, key);
    const json& v = config.at(key);
    if (!v.is_number_integer()) return error("{}: '{}' must be an integer, got {}", source, key, json_excerpt(v));
    return v.get<int64_t>();
}

Result<bool> bool_key(const json& config, const char* key, bool fallback, const std::string& source) {
    if (!present(config, key)) return fallback;
    const json& v = config.at(key);
    if (!v.is_boolean()) return error("{}: '{}' must be true or false, got {}", source, key, json_excerpt(v));
    return v.get<bool>();
}

// n_inner / ffn_hidden_size / ffn_dim may be null: 4 x hidden_size then.
Status feed_forward_size(json& out, std::initializer_list<const char*> aliases, const std::string& source) {
    alias(out, "intermediate_size", aliases);
    if (present(out, "intermediate_size")) return Status::ok();
    TACO_ASSIGN_OR_RETURN(int64_t hidden, int_key(out, "hidden_size", source));
    out["intermediate_size"] = 4 * hidden;
    return Status::ok();
}

// The class default for tie_word_embeddings: PretrainedConfig's True unless the config class says otherwise;
// transformers 4.x leaves a value equal to the default out of config.json.
void tie_default(json& out, bool tied) {
    if (!present(out, "tie_word_embeddings")) out["tie_word_embeddings"] = tied;
}

// GPT-J gives rotary_dim as a count; ModelConfig keeps a factor with rotary_dim() = int(head_dim * factor).
// The factor is nudged up by ulps until that truncation gives the count back.
Status rotary_dim_as_factor(json& out, const std::string& source) {
    if (!present(out, "rotary_dim")) return Status::ok();
    TACO_ASSIGN_OR_RETURN(int64_t rotary_dim, int_key(out, "rotary_dim", source));
    TACO_ASSIGN_OR_RETURN(int64_t hidden, int_key(out, "hidden_size", source));
    TACO_ASSIGN_OR_RETURN(int64_t heads, int_key(out, "num_attention_heads", source));
    if (heads <= 0 || hidden % heads != 0)
        return error("{}: n_head ({}) must divide n_embd ({})", source, heads, hidden);
    const int64_t head_dim = hidden / heads;
    if (rotary_dim <= 0 || rotary_dim > head_dim)
        return error("{}: 'rotary_dim' ({}) must be in (0, head_dim = {}]", source, rotary_dim, head_dim);
    double factor = double(rotary_dim) / double(head_dim);
    while (int64_t(double(head_dim) * factor) < rotary_dim) factor = std::nextafter(factor, 2.0);
    out["partial_rotary_factor"] = factor;
    return Status::ok();
}

Status gpt2_keys(json& out, const std::string& source) {
    alias(out, "hidden_size", {"n_embd"}, 768);
    alias(out, "num_hidden_layers", {"n_layer"}, 12);
    alias(out, "num_attention_heads", {"n_head"}, 12);
    alias(out, "max_position_embeddings", {"n_positions"}, 1024);
    alias(out, "rms_norm_eps", {"layer_norm_epsilon"}, 1e-5);
    alias(out, "hidden_act", {"activation_function"}, "gelu_new");
    tie_default(out, true);
    return feed_forward_size(out, {"n_inner"}, source);
}

Status gpt_bigcode_keys(json& out, const std::string& source) {
    alias(out, "hidden_act", {"activation_function"}, "gelu_pytorch_tanh");
    TACO_RETURN_IF_ERROR(gpt2_keys(out, source));
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_key(out, "multi_query", true, source));
    if (multi_query && !present(out, "num_key_value_heads")) out["num_key_value_heads"] = 1;
    return Status::ok();
}

Status gptj_keys(json& out, const std::string& source) {
    alias(out, "hidden_size", {"n_embd"}, 4096);
    alias(out, "num_hidden_layers", {"n_layer"}, 28);
    alias(out, "num_attention_heads", {"n_head"}, 16);
    alias(out, "max_position_embeddings", {"n_positions"}, 2048);
    alias(out, "rms_norm_eps", {"layer_norm_epsilon"}, 1e-5);
    alias(out, "hidden_act", {"activation_function"}, "gelu_new");
    tie_default(out, false);
    TACO_RETURN_IF_ERROR(feed_forward_size(out, {"n_inner"}, source));
    if (!present(out, "partial_rotary_factor")) TACO_RETURN_IF_ERROR(rotary_dim_as_factor(out, source));
    return Status::ok();
}

Status gpt_neox_keys(json& out) {
    alias(out, "rms_norm_eps", {"layer_norm_eps"}, 1e-5);
    alias(out, "partial_rotary_factor", {"rotary_pct"}, 0.25);
    alias(out, "rope_theta", {"rotary_emb_base"});
    alias(out, "hidden_act", {}, "gelu");
    tie_default(out, false);
    return Status::ok();
}

Status opt_keys(json& out, const std::string& source) {
    alias(out, "hidden_act", {"activation_function"}, "relu");
    alias(out, "rms_norm_eps", {}, 1e-5);  // nn.LayerNorm's default: OPT has no key for it
    tie_default(out, true);
    return feed_forward_size(out, {"ffn_dim"}, source);
}

Status phi_keys(json& out) {
    alias(out, "rms_norm_eps", {"layer_norm_eps"}, 1e-5);
    alias(out, "partial_rotary_factor", {}, 0.5);
    alias(out, "hidden_act", {}, "gelu_new");
    tie_default(out, false);
    return Status::ok();
}

// Falcon: new_decoder_architecture uses num_kv_heads groups; the old one a single kv head with multi_query,
// else one per query head (the fused layout has no room for any other count).
Status falcon_keys(json& out, const std::string& source) {
    alias(out, "hidden_size", {"n_embed"});
    alias(out, "num_hidden_layers", {"n_layer"});
    alias(out, "num_attention_heads", {"n_head"});
    alias(out, "rms_norm_eps", {"layer_norm_epsilon"}, 1e-5);
    alias(out, "hidden_act", {"activation"}, "gelu");
    tie_default(out, true);
    TACO_ASSIGN_OR_RETURN(bool new_architecture, bool_key(out, "new_decoder_architecture", false, source));
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_key(out, "multi_query", true, source));
    if (!present(out, "num_key_value_heads")) {
        if (new_architecture) {
            alias(out, "num_key_value_heads", {"num_kv_heads", "n_head_kv", "num_attention_heads"});
        } else if (multi_query) {
            out["num_key_value_heads"] = 1;
        } else {
            alias(out, "num_key_value_heads", {"num_attention_heads"});
        }
    }
    return feed_forward_size(out, {"ffn_hidden_size"}, source);
}

Status bloom_keys(json& out, const std::string& source) {
    alias(out, "hidden_size", {"n_embed"}, 64);
    alias(out, "num_hidden_layers", {"n_layer"}, 2);
    alias(out, "num_attention_heads", {"n_head"}, 8);
    alias(out, "rms_norm_eps", {"layer_norm_epsilon"}, 1e-5);
    alias(out, "hidden_act", {}, "gelu_pytorch_tanh");  // bloom_gelu_forward is the tanh approximation
    tie_default(out, true);
    return feed_forward_size(out, {}, source);
}

}  // namespace

Result<json> with_standard_keys(const json& config, const std::string& source) {
    if (!config.is_object() || !present(config, "model_type") || !config.at("model_type").is_string()) return config;
    json out = config;
    const std::string model_type = config.at("model_type").get<std::string>();
    Status status;
    if (model_type == "gpt2") status = gpt2_keys(out, source);
    if (model_type == "gpt_bigcode") status = gpt_bigcode_keys(out, source);
    if (model_type == "gptj") status = gptj_keys(out, source);
    if (model_type == "gpt_neox") status = gpt_neox_keys(out);
    if (model_type == "opt") status = opt_keys(out, source);
    if (model_type == "phi") status = phi_keys(out);
    if (model_type == "falcon" || model_type == "RefinedWeb" || model_type == "RefinedWebModel")
        status = falcon_keys(out, source);
    if (model_type == "bloom") status = bloom_keys(out, source);
    TACO_RETURN_IF_ERROR(status);
    return out;
}

}  // namespace taco
