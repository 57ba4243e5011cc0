// ArchSpec: an architecture described as data for the one generic decoder (ARCHITECTURE.md, "Architectures
// are data"): embedding -> N x [norm, attention, norm, MLP] -> norm -> lm_head. A new family is one file in
// model/archs/ returning its ArchSpec, plus one line in arch_registry.cc, plus one golden test.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/ops.h"
#include "model/model_config.h"
#include "model/moe_spec.h"

namespace taco {

enum class NormKind { kRmsNorm, kLayerNorm };

// Checkpoint tensor names. "{}" stands for the layer index. Linear layers are named without the
// ".weight"/".bias" suffix.
struct WeightNames {
    std::string embed = "model.embed_tokens.weight";
    std::string final_norm = "model.norm.weight";
    std::string lm_head = "lm_head.weight";
    std::string input_norm = "model.layers.{}.input_layernorm.weight";
    std::string post_attention_norm = "model.layers.{}.post_attention_layernorm.weight";
    std::string q_proj = "model.layers.{}.self_attn.q_proj";
    std::string k_proj = "model.layers.{}.self_attn.k_proj";
    std::string v_proj = "model.layers.{}.self_attn.v_proj";
    std::string o_proj = "model.layers.{}.self_attn.o_proj";
    std::string gate_proj = "model.layers.{}.mlp.gate_proj";
    std::string up_proj = "model.layers.{}.mlp.up_proj";
    std::string down_proj = "model.layers.{}.mlp.down_proj";
};

struct ArchSpec {
    std::string name;  // the HF `architectures` name
    NormKind norm = NormKind::kRmsNorm;
    float norm_weight_offset = 0.0f;  // Gemma stores (weight - 1)
    bool qkv_bias = false;
    bool o_bias = false;
    bool mlp_bias = false;
    ops::Activation activation = ops::Activation::kSilu;
    bool tied_embeddings = false;      // lm_head reads the embedding table
    bool neox_rotary = true;           // rotate halves (HF Llama); false: interleaved pairs
    bool uses_sliding_window = false;  // honour config.sliding_window / layer_types
    WeightNames names;
    // Checkpoint tensors that carry no weights (e.g. old "rotary_emb.inv_freq" buffers): suffixes.
    std::vector<std::string> ignored_tensor_suffixes = {"rotary_emb.inv_freq"};
    // MoE
    MoeSpec moe;  // moe.num_experts 0: every layer has the dense MLP
};

// The activation named by config.json's `hidden_act`, or an error naming it.
Result<ops::Activation> activation_from_name(const std::string& hidden_act, const std::string& source);

}  // namespace taco
