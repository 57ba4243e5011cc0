#include "model/model_config.h"

#include <cmath>
#include <cstdint>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/json_util.h"
#include "model/config_aliases.h"
#include "model/remote_config_keys.h"

namespace taco {
namespace {

using json = nlohmann::json;

// Typed reads of optional keys; a present key of the wrong type is an error naming it.
class JsonReader {
public:
    JsonReader(const json& object, std::string source) : object_(object), source_(std::move(source)) {}

    const Status& status() const { return status_; }

    bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }

    int64_t get_int(const char* key, int64_t fallback) {
        if (!has(key)) return fallback;
        const json& v = object_.at(key);
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
            fail(key, "an integer within int64", v);  // not wrapped to a negative value
            return fallback;
        }
        if (v.is_number_integer()) return v.get<int64_t>();
        // A whole float within int64 (1e15 in some configs); outside that range the cast itself would be undefined.
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return int64_t(d);
        }
        fail(key, "an integer", v);
        return fallback;
    }
    double get_double(const char* key, double fallback) {
        if (!has(key)) return fallback;
        const json& v = object_.at(key);
        if (v.is_number()) return v.get<double>();
        fail(key, "a number", v);
        return fallback;
    }
    std::optional<double> get_optional_double(const char* key) {
        if (!has(key)) return std::nullopt;
        return get_double(key, 0.0);
    }
    bool get_bool(const char* key, bool fallback) {
        if (!has(key)) return fallback;
        const json& v = object_.at(key);
        if (v.is_boolean()) return v.get<bool>();
        fail(key, "true or false", v);
        return fallback;
    }
    std::string get_string(const char* key, const std::string& fallback) {
        if (!has(key)) return fallback;
        const json& v = object_.at(key);
        if (v.is_string()) return v.get<std::string>();
        fail(key, "a string", v);
        return fallback;
    }
    // An int or a list of ints (eos_token_id).
    std::vector<int32_t> get_int_list(const char* key) {
        std::vector<int32_t> out;
        if (!has(key)) return out;
        const json& v = object_.at(key);
        auto is_id = [](const json& x) {
            return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= limits::kMaxTokenId;
        };
        if (is_id(v)) return {v.get<int32_t>()};
        if (v.is_array()) {
            for (const json& item : v) {
                if (!is_id(item)) {
                    fail(key, "an integer or a list of integers in [0, limits::kMaxTokenId]", v);
                    return {};
                }
                out.push_back(item.get<int32_t>());
            }
            return out;
        }
        fail(key, "an integer or a list of integers in [0, limits::kMaxTokenId]", v);
        return out;
    }

private:
    void fail(const char* key, const char* expected, const json& got) {
        if (status_.is_ok()) status_ = error("{}: '{}' must be {}, got {}", source_, key, expected, json_excerpt(got));
    }
    const json& object_;
    std::string source_;
    Status status_;
};

Result<RopeType> parse_rope_type(const std::string& name, const std::string& source) {
    if (name == "default" || name.empty()) return RopeType::kDefault;
    if (name == "linear") return RopeType::kLinear;
    if (name == "dynamic") return RopeType::kDynamic;
    if (name == "llama3") return RopeType::kLlama3;
    if (name == "yarn") return RopeType::kYarn;
    if (name == "longrope") return RopeType::kLongRope;
    return error("{}: rope type '{}' is not supported (supported: default, linear, dynamic, llama3, yarn, longrope)",
                 source, name);
}

Result<std::vector<double>> factor_list(const json& params, const char* key, const std::string& where) {
    if (!params.contains(key) || !params.at(key).is_array())
        return error("{}: rope type 'longrope' needs '{}' (a list of numbers)", where, key);
    std::vector<double> out;
    for (const json& v : params.at(key)) {
        if (!v.is_number()) return error("{}: '{}' must hold numbers, got {}", where, key, json_excerpt(v));
        out.push_back(v.get<double>());
    }
    return out;
}

// LongRoPE (Phi3): original_max_position_embeddings sits in the rope object (5.x) or at the top level (4.x); without
// a `factor`, the scale is max_position_embeddings / original (as transformers).
Result<RopeConfig> finish_longrope(const json& config, const json& params, const std::string& where, RopeConfig rope) {
    TACO_ASSIGN_OR_RETURN(rope.short_factor, factor_list(params, "short_factor", where));
    TACO_ASSIGN_OR_RETURN(rope.long_factor, factor_list(params, "long_factor", where));
    JsonReader top(config, where);
    JsonReader p(params, where);
    if (rope.original_max_position_embeddings <= 0)
        rope.original_max_position_embeddings = top.get_int("original_max_position_embeddings", 0);
    const int64_t max_position = top.get_int("max_position_embeddings", 2048);
    TACO_RETURN_IF_ERROR(top.status());
    if (rope.original_max_position_embeddings <= 0)
        return error("{}: rope type 'longrope' needs 'original_max_position_embeddings'", where);
    if (!p.has("factor")) rope.factor = double(max_position) / double(rope.original_max_position_embeddings);
    rope.short_mscale = p.get_optional_double("short_mscale");
    rope.long_mscale = p.get_optional_double("long_mscale");
    TACO_RETURN_IF_ERROR(p.status());
    if (rope.factor <= 0) return error("{}: 'factor' must be positive, got {}", where, rope.factor);
    return rope;
}

// transformers 4.x: rope_theta + rope_scaling {type|rope_type, factor, ...}; 5.x: rope_parameters {rope_type,
// rope_theta, factor, ...}. Both may appear (5.x keeps reading rope_scaling); rope_parameters wins.
Result<RopeConfig> parse_rope(const json& config, const std::string& source) {
    RopeConfig rope;
    JsonReader top(config, source);
    rope.theta = top.get_double("rope_theta", 10000.0);
    rope.partial_rotary_factor = top.get_double("partial_rotary_factor", 1.0);
    TACO_RETURN_IF_ERROR(top.status());

    const json* params = nullptr;
    std::string params_key;
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        if (config.contains(key) && !config.at(key).is_null()) {
            params = &config.at(key);
            params_key = key;
            break;
        }
    }
    if (params == nullptr) return rope;
    if (!params->is_object()) return error("{}: '{}' must be an object, got {}", source, params_key, params->dump());
    // 5.x may nest per layer type ({"full_attention": {...}, "sliding_attention": {...}}): full attention's is the
    // main rope (sliding_attention's is read by parse_local_rope).
    if (params->contains("full_attention") || params->contains("sliding_attention")) {
        if (!params->contains("full_attention") || !params->at("full_attention").is_object())
            return error("{}: per-layer-type '{}' needs a 'full_attention' object", source, params_key);
        params = &params->at("full_attention");
        params_key += ".full_attention";
    }

    const std::string where = source + " " + params_key;
    JsonReader p(*params, where);
    std::string type_name = p.get_string("rope_type", p.get_string("type", "default"));
    TACO_ASSIGN_OR_RETURN(rope.type, parse_rope_type(type_name, where));
    rope.theta = p.get_double("rope_theta", rope.theta);
    rope.partial_rotary_factor = p.get_double("partial_rotary_factor", rope.partial_rotary_factor);
    rope.factor = p.get_double("factor", 1.0);
    rope.original_max_position_embeddings = p.get_int("original_max_position_embeddings", 0);
    rope.low_freq_factor = p.get_double("low_freq_factor", 1.0);
    rope.high_freq_factor = p.get_double("high_freq_factor", 4.0);
    rope.attention_factor = p.get_optional_double("attention_factor");
    // `beta_fast or 32` in transformers: a present 0 also falls back.
    rope.beta_fast = p.get_double("beta_fast", 32.0);
    if (rope.beta_fast == 0) rope.beta_fast = 32.0;
    rope.beta_slow = p.get_double("beta_slow", 1.0);
    if (rope.beta_slow == 0) rope.beta_slow = 1.0;
    rope.mscale = p.get_optional_double("mscale");
    rope.mscale_all_dim = p.get_optional_double("mscale_all_dim");
    rope.truncate = p.get_bool("truncate", true);
    TACO_RETURN_IF_ERROR(p.status());
    if (rope.type == RopeType::kLongRope) return finish_longrope(config, *params, where, std::move(rope));
    if (rope.type != RopeType::kDefault && !p.has("factor") && rope.type != RopeType::kYarn)
        return error("{}: rope type '{}' needs 'factor'", where, type_name);
    if (rope.type == RopeType::kLlama3 && rope.original_max_position_embeddings <= 0)
        return error("{}: rope type 'llama3' needs 'original_max_position_embeddings'", where);
    if (rope.factor <= 0) return error("{}: 'factor' must be positive, got {}", where, rope.factor);
    return rope;
}

// Gemma3's local (sliding-window) layers: 4.x names only their theta (rope_local_base_freq, default rope); 5.x
// nests a full rope object under rope_parameters.sliding_attention.
Result<std::optional<RopeConfig>> parse_local_rope(const json& config, const std::string& source) {
    if (config.contains("rope_parameters") && config["rope_parameters"].is_object() &&
        config["rope_parameters"].contains("sliding_attention")) {
        json local = config;
        local.erase("rope_scaling");
        local["rope_parameters"] = config["rope_parameters"]["sliding_attention"];
        if (!local["rope_parameters"].is_object())
            return error("{}: 'rope_parameters.sliding_attention' must be an object", source);
        TACO_ASSIGN_OR_RETURN(RopeConfig rope, parse_rope(local, source + " (sliding_attention)"));
        return std::optional<RopeConfig>(rope);
    }
    JsonReader top(config, source);
    if (!top.has("rope_local_base_freq")) return std::optional<RopeConfig>();
    RopeConfig rope;
    rope.theta = top.get_double("rope_local_base_freq", 10000.0);
    rope.partial_rotary_factor = top.get_double("partial_rotary_factor", 1.0);
    TACO_RETURN_IF_ERROR(top.status());
    return std::optional<RopeConfig>(rope);
}

Result<std::optional<DType>> parse_dtype(const json& config, const std::string& source) {
    for (const char* key : {"dtype", "torch_dtype"}) {
        if (!config.contains(key) || config.at(key).is_null()) continue;
        const json& v = config.at(key);
        if (!v.is_string()) return error("{}: '{}' must be a string, got {}", source, key, json_excerpt(v));
        std::string name = v.get<std::string>();
        if (name == "float32") return std::optional<DType>(DType::kF32);
        if (name == "float16") return std::optional<DType>(DType::kF16);
        if (name == "bfloat16") return std::optional<DType>(DType::kBF16);
        return error("{}: '{}' = '{}' is not supported (float32, float16, bfloat16)", source, key, name);
    }
    return std::optional<DType>();
}

// MoE keys (ModelConfig's MoE block); which of them a family needs is checked by its ArchSpec builder.
Status parse_moe(const json& config, const std::string& source, ModelConfig& c) {
    JsonReader r(config, source);
    c.num_experts = r.get_int("num_local_experts", r.get_int("num_experts", 0));
    c.num_experts_per_tok = r.get_int("num_experts_per_tok", 0);
    c.moe_intermediate_size = r.get_int("moe_intermediate_size", 0);
    c.shared_expert_intermediate_size = r.get_int("shared_expert_intermediate_size", 0);
    if (r.has("norm_topk_prob")) c.norm_topk_prob = r.get_bool("norm_topk_prob", false);
    c.decoder_sparse_step = r.get_int("decoder_sparse_step", 1);
    c.mlp_only_layers = r.get_int_list("mlp_only_layers");
    c.router_jitter_noise = r.get_optional_double("router_jitter_noise");
    return r.status();
}

}  // namespace

std::string_view rope_type_name(RopeType type) {
    switch (type) {
        case RopeType::kDefault: return "default";
        case RopeType::kLinear: return "linear";
        case RopeType::kDynamic: return "dynamic";
        case RopeType::kLlama3: return "llama3";
        case RopeType::kYarn: return "yarn";
        case RopeType::kLongRope: return "longrope";
    }
    return "?";
}

// nlohmann::json spelled out: inside RawConfig, `json` names the accessor.
RawConfig::RawConfig(const nlohmann::json& config) : json_(std::make_shared<const nlohmann::json>(config)) {}

const nlohmann::json& RawConfig::json() const {
    static const nlohmann::json kNull;
    return json_ ? *json_ : kNull;
}

bool RawConfig::is_object() const { return json().is_object(); }

bool RawConfig::contains(const std::string& key) const { return json().contains(key); }

const nlohmann::json& RawConfig::at(const std::string& key) const { return json().at(key); }

Result<ModelConfig> ModelConfig::from_json(const json& original, const std::string& source) {
    if (!original.is_object()) return error("{}: must be a JSON object", source);
    TACO_ASSIGN_OR_RETURN(const json remote, with_remote_code_keys(original, source));
    TACO_ASSIGN_OR_RETURN(const json config, with_standard_keys(remote, source));
    ModelConfig c;
    c.raw = RawConfig(original);
    JsonReader r(config, source);
    if (!config.contains("architectures") || !config["architectures"].is_array() || config["architectures"].empty() ||
        !config["architectures"][0].is_string())
        return error("{}: 'architectures' must be a non-empty list of names", source);
    c.architecture = config["architectures"][0].get<std::string>();
    c.model_type = r.get_string("model_type", "");
    c.vocab_size = r.get_int("vocab_size", 0);
    c.hidden_size = r.get_int("hidden_size", 0);
    c.intermediate_size = r.get_int("intermediate_size", 0);
    c.num_hidden_layers = r.get_int("num_hidden_layers", 0);
    c.num_attention_heads = r.get_int("num_attention_heads", 0);
    c.num_key_value_heads = r.get_int("num_key_value_heads", c.num_attention_heads);
    c.head_dim = r.get_int("head_dim", c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
    c.max_position_embeddings = r.get_int("max_position_embeddings", 2048);
    c.rms_norm_eps = r.get_double("rms_norm_eps", 1e-6);
    c.hidden_act = r.get_string("hidden_act", "silu");
    c.tie_word_embeddings = r.get_bool("tie_word_embeddings", false);
    c.attention_bias = r.get_bool("attention_bias", false);
    c.mlp_bias = r.get_bool("mlp_bias", false);
    c.sliding_window = r.get_int("sliding_window", 0);
    TACO_RETURN_IF_ERROR(r.status());
    // Before anything is sized from them (layer_types below, weights, KV): products of bounded sizes fit int64.
    TACO_RETURN_IF_ERROR(c.check_size_bounds().with_context(source));
    TACO_ASSIGN_OR_RETURN(c.rope, parse_rope(config, source));
    TACO_ASSIGN_OR_RETURN(c.rope_local, parse_local_rope(config, source));
    TACO_ASSIGN_OR_RETURN(c.dtype, parse_dtype(config, source));
    TACO_RETURN_IF_ERROR(parse_moe(config, source, c));
    if (config.contains("quantization_config") && !config["quantization_config"].is_null())
        return error("{}: quantized checkpoints ('quantization_config') are not supported yet", source);

    // Which layers use the sliding window: 5.x writes layer_types; otherwise Qwen2's use_sliding_window /
    // max_window_layers, otherwise every layer when sliding_window is set.
    c.layer_types.assign(size_t(std::max<int64_t>(c.num_hidden_layers, 0)), LayerAttention::kFull);
    if (config.contains("layer_types") && config["layer_types"].is_array()) {
        const json& types = config["layer_types"];
        if (int64_t(types.size()) != c.num_hidden_layers)
            return error("{}: 'layer_types' has {} entries for {} layers", source, types.size(), c.num_hidden_layers);
        for (size_t i = 0; i < types.size(); ++i) {
            std::string t = types[i].is_string() ? types[i].get<std::string>() : "";
            if (t == "full_attention") continue;
            if (t == "sliding_attention") {
                c.layer_types[i] = LayerAttention::kSliding;
                continue;
            }
            return error("{}: layer_types[{}] = {} is not supported", source, i, json_excerpt(types[i]));
        }
    } else if (config.contains("use_sliding_window")) {
        bool use = r.get_bool("use_sliding_window", false);
        int64_t max_window_layers = r.get_int("max_window_layers", c.num_hidden_layers);
        TACO_RETURN_IF_ERROR(r.status());
        for (int64_t i = 0; i < c.num_hidden_layers; ++i)
            if (use && c.sliding_window > 0 && i >= max_window_layers)
                c.layer_types[size_t(i)] = LayerAttention::kSliding;
    } else if (c.sliding_window > 0) {
        for (auto& t : c.layer_types) t = LayerAttention::kSliding;
    }
    bool any_sliding = false;
    for (auto t : c.layer_types) any_sliding |= t == LayerAttention::kSliding;
    if (!any_sliding) c.sliding_window = 0;

    c.generation.eos_token_ids = r.get_int_list("eos_token_id");
    auto bos = r.get_int_list("bos_token_id");
    if (!bos.empty()) c.generation.bos_token_id = bos[0];
    auto pad = r.get_int_list("pad_token_id");
    if (!pad.empty()) c.generation.pad_token_id = pad[0];
    TACO_RETURN_IF_ERROR(r.status());
    TACO_RETURN_IF_ERROR(c.validate().with_context(source));
    return c;
}

Status ModelConfig::apply_generation_config(const json& generation_json, const std::string& source) {
    if (!generation_json.is_object()) return error("{}: must be a JSON object", source);
    JsonReader r(generation_json, source);
    auto eos = r.get_int_list("eos_token_id");
    if (!eos.empty()) generation.eos_token_ids = eos;
    auto bos = r.get_int_list("bos_token_id");
    if (!bos.empty()) generation.bos_token_id = bos[0];
    auto pad = r.get_int_list("pad_token_id");
    if (!pad.empty()) generation.pad_token_id = pad[0];
    generation.do_sample = r.get_bool("do_sample", false);
    if (r.has("temperature")) generation.temperature = r.get_double("temperature", 1.0);
    if (r.has("top_p")) generation.top_p = r.get_double("top_p", 1.0);
    if (r.has("top_k")) generation.top_k = r.get_int("top_k", 0);
    if (r.has("repetition_penalty")) generation.repetition_penalty = r.get_double("repetition_penalty", 1.0);
    return r.status();
}

Status ModelConfig::check_size_bounds() const {
    const std::pair<const char*, int64_t> dims[] = {
        {"vocab_size", vocab_size},
        {"hidden_size", hidden_size},
        {"intermediate_size", intermediate_size},
        {"num_attention_heads", num_attention_heads},
        {"num_key_value_heads", num_key_value_heads},
        {"head_dim", head_dim},
        {"num_experts", num_experts},
        {"num_experts_per_tok", num_experts_per_tok},
        {"moe_intermediate_size", moe_intermediate_size},
        {"shared_expert_intermediate_size", shared_expert_intermediate_size}};
    for (const auto& [key, value] : dims)
        if (value < 0 || value > limits::kMaxModelDim)
            return error("'{}' = {} is outside [0, {}] (limits::kMaxModelDim)", key, value, limits::kMaxModelDim);
    // Weights are at most two-dimensional products of these, save the fused widths below (q/k/v rows, an expert
    // stack's rows), which are bounded as one dimension too: every tensor then holds fewer than 2^48 elements, and
    // any sum over layers of their bytes fits int64.
    const std::tuple<const char*, const char*, int64_t, int64_t> widths[] = {
        {"num_attention_heads", "head_dim", num_attention_heads, head_dim},
        {"num_key_value_heads", "head_dim", num_key_value_heads, head_dim},
        {"num_experts", "moe_intermediate_size", num_experts, moe_intermediate_size},
        {"num_experts", "intermediate_size", num_experts, intermediate_size}};
    for (const auto& [a, b, x, y] : widths)
        if (x * y > limits::kMaxModelDim)  // each factor is at most 2^24: the product cannot overflow
            return error("'{}' x '{}' = {} x {} is over {} (limits::kMaxModelDim)", a, b, x, y, limits::kMaxModelDim);
    if (num_hidden_layers < 0 || num_hidden_layers > limits::kMaxModelLayers)
        return error("'num_hidden_layers' = {} is outside [0, {}] (limits::kMaxModelLayers)", num_hidden_layers,
                     limits::kMaxModelLayers);
    if (max_position_embeddings < 0 || max_position_embeddings > limits::kMaxModelPositions)
        return error("'max_position_embeddings' = {} is outside [0, {}] (limits::kMaxModelPositions)",
                     max_position_embeddings, limits::kMaxModelPositions);
    // rotary_dim() casts head_dim x factor to an integer.
    if (!(rope.partial_rotary_factor > 0 && rope.partial_rotary_factor <= 1))
        return error("'partial_rotary_factor' must be in (0, 1], got {}", rope.partial_rotary_factor);
    if (sliding_window < 0 || sliding_window > limits::kMaxModelPositions)
        return error("'sliding_window' = {} is outside [0, {}] (limits::kMaxModelPositions)", sliding_window,
                     limits::kMaxModelPositions);
    return Status::ok();
}

Status ModelConfig::validate() const {
    TACO_RETURN_IF_ERROR(check_size_bounds());
    auto positive = [](int64_t v) { return v > 0; };
    if (!positive(vocab_size)) return error("'vocab_size' must be positive, got {}", vocab_size);
    if (!positive(hidden_size)) return error("'hidden_size' must be positive, got {}", hidden_size);
    if (!positive(intermediate_size)) return error("'intermediate_size' must be positive, got {}", intermediate_size);
    if (!positive(num_hidden_layers)) return error("'num_hidden_layers' must be positive, got {}", num_hidden_layers);
    if (!positive(num_attention_heads))
        return error("'num_attention_heads' must be positive, got {}", num_attention_heads);
    if (!positive(num_key_value_heads) || num_attention_heads % num_key_value_heads != 0)
        return error("'num_key_value_heads' ({}) must divide 'num_attention_heads' ({})", num_key_value_heads,
                     num_attention_heads);
    if (!positive(head_dim) || head_dim % 2 != 0)
        return error("'head_dim' must be positive and even, got {}", head_dim);
    if (rotary_dim() % 2 != 0 || rotary_dim() <= 0 || rotary_dim() > head_dim)
        return error("rotary dimension {} (head_dim x partial_rotary_factor) must be even and in (0, head_dim]",
                     rotary_dim());
    if (rope.type == RopeType::kLongRope &&
        (int64_t(rope.short_factor.size()) != rotary_dim() / 2 || int64_t(rope.long_factor.size()) != rotary_dim() / 2))
        return error("longrope 'short_factor' ({}) and 'long_factor' ({}) must each have rotary_dim / 2 = {} entries",
                     rope.short_factor.size(), rope.long_factor.size(), rotary_dim() / 2);
    if (sliding_window < 0) return error("'sliding_window' must not be negative, got {}", sliding_window);
    if (!(rms_norm_eps > 0)) return error("'rms_norm_eps' must be positive, got {}", rms_norm_eps);
    return Status::ok();
}

int64_t ModelConfig::derived_max_model_len() const {
    // A scaled length is clamped to the positions limit (a huge rope factor must not overflow the cast).
    auto scaled = [](int64_t base, double factor) {
        const double len = double(base) * factor;
        return len < double(limits::kMaxModelPositions) ? int64_t(len) : limits::kMaxModelPositions;
    };
    switch (rope.type) {
        case RopeType::kDefault:
        case RopeType::kLlama3:
        case RopeType::kLongRope: return max_position_embeddings;  // Phi3 stores the extended length
        case RopeType::kLinear:
        case RopeType::kDynamic: return scaled(max_position_embeddings, rope.factor);
        case RopeType::kYarn: {
            int64_t base = rope.original_max_position_embeddings > 0 ? rope.original_max_position_embeddings
                                                                     : max_position_embeddings;
            return scaled(base, rope.factor);
        }
    }
    return max_position_embeddings;
}

Result<ModelConfig> ModelConfig::load_dir(const std::string& dir) {
    const std::string config_path = join_path(dir, "config.json");
    if (!file_exists(config_path)) return error("{}: no config.json (is this a model folder?)", dir);
    TACO_ASSIGN_OR_RETURN(json config_json, read_json_file(config_path));
    TACO_ASSIGN_OR_RETURN(ModelConfig config, from_json(config_json, config_path));
    const std::string generation_path = join_path(dir, "generation_config.json");
    if (file_exists(generation_path)) {
        TACO_ASSIGN_OR_RETURN(json generation_json, read_json_file(generation_path));
        TACO_RETURN_IF_ERROR(config.apply_generation_config(generation_json, generation_path));
    }
    return config;
}

}  // namespace taco
