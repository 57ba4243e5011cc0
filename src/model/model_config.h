// ModelConfig: the plain, validated form of a Hugging Face `config.json` (+ `generation_config.json`).
// Accepts transformers 4.x keys (rope_theta, rope_scaling, torch_dtype) and 5.x keys (rope_parameters, dtype).
// Architecture-specific meaning (which weights exist, biases, ...) lives in ArchSpec, not here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "core/status.h"

namespace taco {

enum class RopeType { kDefault, kLinear, kDynamic, kLlama3, kYarn, kLongRope };

struct RopeConfig {
    RopeType type = RopeType::kDefault;
    double theta = 10000.0;
    double partial_rotary_factor = 1.0;
    double factor = 1.0;                                   // linear, dynamic, llama3, yarn
    int64_t original_max_position_embeddings = 0;          // llama3, yarn (0: max_position_embeddings)
    double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
    std::optional<double> attention_factor;                // yarn
    double beta_fast = 32.0, beta_slow = 1.0;              // yarn
    std::optional<double> mscale, mscale_all_dim;          // yarn (DeepSeek style)
    bool truncate = true;                                  // yarn
    // longrope (Phi3): per-frequency divisors [rotary_dim / 2]; the long ones serve requests that may grow past
    // original_max_position_embeddings. `factor` defaults to max_position_embeddings / original.
    std::vector<double> short_factor, long_factor;
    // MoE: PhiMoE's LongRoPE scales cos/sin of the short and long tables by these instead of the derived factor.
    std::optional<double> short_mscale, long_mscale;
};

enum class LayerAttention { kFull, kSliding };

struct GenerationDefaults {
    std::vector<int32_t> eos_token_ids;  // from generation_config.json, else config.json
    std::optional<int32_t> bos_token_id;
    std::optional<int32_t> pad_token_id;
    std::optional<double> temperature, top_p, repetition_penalty;
    std::optional<int64_t> top_k;
    bool do_sample = false;
};

// The whole config.json as read, shared read-only by copies of a ModelConfig. A pointer keeps nlohmann/json.hpp
// out of the many files that include this header; the few that read family-specific keys include it themselves.
class RawConfig {
public:
    RawConfig() = default;  // nothing read: not an object, contains nothing
    explicit RawConfig(const nlohmann::json& config);

    const nlohmann::json& json() const;  // null when nothing was read
    bool is_object() const;
    bool contains(const std::string& key) const;
    // Throw as nlohmann::json::at does when the key is missing.
    const nlohmann::json& at(const std::string& key) const;
    const nlohmann::json& operator[](const std::string& key) const { return at(key); }

private:
    std::shared_ptr<const nlohmann::json> json_;
};

struct ModelConfig {
    std::string architecture;  // architectures[0], e.g. "LlamaForCausalLM"
    std::string model_type;
    int64_t vocab_size = 0;
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t num_hidden_layers = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;
    int64_t head_dim = 0;
    int64_t max_position_embeddings = 0;
    double rms_norm_eps = 1e-6;
    std::string hidden_act = "silu";
    bool tie_word_embeddings = false;
    bool attention_bias = false;
    bool mlp_bias = false;
    int64_t sliding_window = 0;               // 0: none
    std::vector<LayerAttention> layer_types;  // [num_hidden_layers]
    RopeConfig rope;
    std::optional<DType> dtype;  // torch_dtype / dtype as saved
    GenerationDefaults generation;
    // Sliding-window layers' own rope (Gemma3: rope_local_base_freq, or rope_parameters.sliding_attention).
    std::optional<RopeConfig> rope_local;
    RawConfig raw;  // the whole config.json, for architecture-specific keys
    // MoE
    int64_t num_experts = 0;  // num_local_experts (Mixtral, PhiMoE) or num_experts (Qwen MoE); 0: dense
    int64_t num_experts_per_tok = 0;
    int64_t moe_intermediate_size = 0;  // Qwen MoE: per expert (Mixtral and PhiMoE use intermediate_size)
    int64_t shared_expert_intermediate_size = 0;
    std::optional<bool> norm_topk_prob;         // absent: the family's default
    int64_t decoder_sparse_step = 1;            // Qwen MoE: layer l is sparse when (l + 1) % step == 0 ...
    std::vector<int32_t> mlp_only_layers;       // ... and l is not listed here
    std::optional<double> router_jitter_noise;  // PhiMoE: sparsemixer's epsilon (absent: 0.01)

    // Reads DIR/config.json and, if present, DIR/generation_config.json.
    static Result<ModelConfig> load_dir(const std::string& dir);
    // Parses config.json content; `source` names it in errors.
    static Result<ModelConfig> from_json(const nlohmann::json& config, const std::string& source);
    Status apply_generation_config(const nlohmann::json& generation, const std::string& source);

    // Every size from the file within core/limits.h (a clear error naming the key), so that products of sizes
    // cannot overflow; validate() calls it too.
    Status check_size_bounds() const;
    Status validate() const;
    int64_t rotary_dim() const { return int64_t(double(head_dim) * rope.partial_rotary_factor); }
    // vLLM's default context length: max_position_embeddings, times the rope factor for linear/dynamic/yarn
    // (from original_max_position_embeddings when yarn names it).
    int64_t derived_max_model_len() const;
};

std::string_view rope_type_name(RopeType type);

}  // namespace taco
