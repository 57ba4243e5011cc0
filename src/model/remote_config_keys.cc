#include "model/remote_config_keys.h"

#include "core/json_util.h"

#include <algorithm>

namespace taco {
namespace {

using json = nlohmann::json;

bool present(const json& config, const char* key) { return config.contains(key) && !config.at(key).is_null(); }

Result<int64_t> int_or(const json& config, const char* key, int64_t fallback, const std::string& source) {
    if (!present(config, key)) return fallback;
    const json& v = config.at(key);
    if (!v.is_number_integer()) return error("{}: '{}' must be an integer, got {}", source, key, json_excerpt(v));
    return v.get<int64_t>();
}

Result<double> number_or(const json& config, const char* key, double fallback, const std::string& source) {
    if (!present(config, key)) return fallback;
    const json& v = config.at(key);
    if (!v.is_number()) return error("{}: '{}' must be a number, got {}", source, key, json_excerpt(v));
    return v.get<double>();
}

Result<bool> bool_or(const json& config, const char* key, bool fallback, const std::string& source) {
    if (!present(config, key)) return fallback;
    const json& v = config.at(key);
    if (!v.is_boolean()) return error("{}: '{}' must be true or false, got {}", source, key, json_excerpt(v));
    return v.get<bool>();
}

// QWenConfig (Qwen/Qwen-7B configuration_qwen.py) defaults: kv_channels 128, rotary_pct 1.0, rotary_emb_base
// 10000, layer_norm_epsilon 1e-6, seq_length 8192, intermediate_size 22016 (= 2 x the w1/w2 width).
Status qwen_keys(json& out, const std::string& source) {
    TACO_ASSIGN_OR_RETURN(int64_t intermediate, int_or(out, "intermediate_size", 22016, source));
    if (intermediate <= 0 || intermediate % 2 != 0)
        return error("{}: Qwen's 'intermediate_size' ({}) must be positive and even (w1/w2 are half of it)", source,
                     intermediate);
    out["intermediate_size"] = intermediate / 2;
    TACO_ASSIGN_OR_RETURN(out["head_dim"], int_or(out, "kv_channels", 128, source));
    TACO_ASSIGN_OR_RETURN(out["rms_norm_eps"], number_or(out, "layer_norm_epsilon", 1e-6, source));
    TACO_ASSIGN_OR_RETURN(out["rope_theta"], number_or(out, "rotary_emb_base", 10000.0, source));
    TACO_ASSIGN_OR_RETURN(out["partial_rotary_factor"], number_or(out, "rotary_pct", 1.0, source));
    out["hidden_act"] = "silu";
    out.erase("num_key_value_heads");  // every head has its own k/v
    // Past seq_length the published code switches to dynamic NTK rope and log-n query scaling, which this engine
    // does not do: the context is capped at seq_length when either is on.
    TACO_ASSIGN_OR_RETURN(int64_t seq_length, int_or(out, "seq_length", 8192, source));
    TACO_ASSIGN_OR_RETURN(bool dynamic_ntk, bool_or(out, "use_dynamic_ntk", true, source));
    TACO_ASSIGN_OR_RETURN(bool logn_attn, bool_or(out, "use_logn_attn", true, source));
    TACO_ASSIGN_OR_RETURN(int64_t max_positions, int_or(out, "max_position_embeddings", seq_length, source));
    out["max_position_embeddings"] = (dynamic_ntk || logn_attn) ? std::min(max_positions, seq_length) : max_positions;
    return Status::ok();
}

// ChatGLMConfig (THUDM/ChatGLM3 configuration_chatglm.py) defaults: num_layers 28, padded_vocab_size 65024,
// hidden_size 4096, ffn_hidden_size 13696, kv_channels 128, num_attention_heads 32, seq_length 2048,
// layernorm_epsilon 1e-5, multi_query_attention false (then one kv head per query head), multi_query_group_num 1.
// Rotary covers the first half of each head (RotaryEmbedding(kv_channels // 2)) with base 10000.
Status chatglm_keys(json& out, const std::string& source) {
    TACO_ASSIGN_OR_RETURN(out["num_hidden_layers"], int_or(out, "num_layers", 28, source));
    // The embedding and output layer have padded_vocab_size rows (the class sets vocab_size from it).
    TACO_ASSIGN_OR_RETURN(out["vocab_size"], int_or(out, "padded_vocab_size", 65024, source));
    TACO_ASSIGN_OR_RETURN(out["hidden_size"], int_or(out, "hidden_size", 4096, source));
    TACO_ASSIGN_OR_RETURN(out["intermediate_size"], int_or(out, "ffn_hidden_size", 13696, source));
    TACO_ASSIGN_OR_RETURN(int64_t heads, int_or(out, "num_attention_heads", 32, source));
    out["num_attention_heads"] = heads;
    TACO_ASSIGN_OR_RETURN(out["head_dim"], int_or(out, "kv_channels", 128, source));
    TACO_ASSIGN_OR_RETURN(bool multi_query, bool_or(out, "multi_query_attention", false, source));
    TACO_ASSIGN_OR_RETURN(int64_t groups, int_or(out, "multi_query_group_num", 1, source));
    out["num_key_value_heads"] = multi_query ? groups : heads;
    TACO_ASSIGN_OR_RETURN(out["rms_norm_eps"], number_or(out, "layernorm_epsilon", 1e-5, source));
    TACO_ASSIGN_OR_RETURN(out["max_position_embeddings"], int_or(out, "seq_length", 2048, source));
    // Later modeling files scale the base by rope_ratio (chatglm3-6b-32k); the verified code has none.
    TACO_ASSIGN_OR_RETURN(double rope_ratio, number_or(out, "rope_ratio", 1.0, source));
    if (rope_ratio != 1.0)
        return error("{}: ChatGLM 'rope_ratio' {} is not supported (only the base rope, ratio 1)", source, rope_ratio);
    out["rope_theta"] = 10000.0;
    out["partial_rotary_factor"] = 0.5;
    out["hidden_act"] = "silu";
    out["tie_word_embeddings"] = false;
    out.erase("rope_scaling");
    return Status::ok();
}

// Baichuan-13B / Baichuan2 configs give the context length as model_max_length.
Status baichuan_keys(json& out, const std::string& source) {
    if (present(out, "max_position_embeddings") || !present(out, "model_max_length")) return Status::ok();
    TACO_ASSIGN_OR_RETURN(out["max_position_embeddings"], int_or(out, "model_max_length", 4096, source));
    return Status::ok();
}

}  // namespace

Result<json> with_remote_code_keys(const json& config, const std::string& source) {
    if (!config.is_object() || !present(config, "model_type") || !config.at("model_type").is_string()) return config;
    const std::string model_type = config.at("model_type").get<std::string>();
    json out = config;
    Status status;
    if (model_type == "qwen") status = qwen_keys(out, source);
    if (model_type == "chatglm") status = chatglm_keys(out, source);
    if (model_type == "baichuan") status = baichuan_keys(out, source);
    TACO_RETURN_IF_ERROR(status);
    return out;
}

}  // namespace taco
