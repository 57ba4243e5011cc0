// ArchSpec: an architecture described as data for the one generic decoder (ARCHITECTURE.md, "Architectures
// are data"): embedding -> N x [norm, attention, norm, MLP] -> norm -> lm_head. A new family is one file in
// model/archs/ returning its ArchSpec, plus one line in arch_registry.cc, plus one golden test.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/ops.h"
#include "model/model_config.h"
#include "model/moe_spec.h"

namespace taco {

enum class NormKind { kRmsNorm, kLayerNorm };

// GPT-style families
// How positions enter: rotary on q/k, a learned table added to the embeddings, or ALiBi biases on the scores.
enum class PositionEncoding { kRotary, kLearned, kAlibi };
// Rows of a fused qkv projection ([(heads + 2 * kv_heads) * head_dim, hidden], ArchSpec::fused_qkv):
//   kConcatenated: [q | k | v];  kPerHead: per head [q_h | k_h | v_h] (GPT-NeoX, Bloom; kv_heads == heads);
//   kPerKvGroup: per kv head g, [q of the heads of group g | k_g | v_g] (Falcon's new decoder architecture).
enum class QkvLayout { kConcatenated, kPerHead, kPerKvGroup };

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
    // Llama-style families (g-llama). Norm names end in ".weight"; a norm's bias is the same name with ".bias".
    std::string pre_feedforward_norm = "model.layers.{}.pre_feedforward_layernorm.weight";    // sandwich norms
    std::string post_feedforward_norm = "model.layers.{}.post_feedforward_layernorm.weight";  // sandwich norms
    // Per-head q/k norms; "{h}" stands for the head index when ArchSpec::qk_norm_per_head.
    std::string q_norm = "model.layers.{}.self_attn.q_norm.weight";
    std::string k_norm = "model.layers.{}.self_attn.k_norm.weight";
    std::string qkv_proj = "model.layers.{}.self_attn.qkv_proj";    // fused_qkv: rows [q | k | v]
    std::string gate_up_proj = "model.layers.{}.mlp.gate_up_proj";  // fused_gate_up: rows [gate | up]
    // GPT-style families: empty means the model has no such tensor (final_norm too: OPT post-norm).
    std::string pos_embed;    // learned position table [max_positions + position_offset, hidden]
    std::string embed_norm;   // LayerNorm right after the embedding (Bloom), ".weight" included
    std::string project_in;   // [hidden, embed_dim] after the embedding (OPT word_embed_proj_dim), no bias
    std::string project_out;  // [embed_dim, hidden] before the head, no bias
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

    // Llama-style families (g-llama). Defaults keep the families above unchanged.
    std::optional<double> norm_eps;           // else config.rms_norm_eps (layer_norm_eps, norm_epsilon, ... differ)
    bool norm_bias = false;                   // LayerNorm with a bias (StableLM, Starcoder2, Nemotron)
    bool scale_embeddings = false;            // embeddings x sqrt(hidden) in fp32 (Gemma)
    float attention_scale = 0.0f;             // 0: 1 / sqrt(head_dim); Gemma2/3: query_pre_attn_scalar^-0.5
    float attn_logit_softcap = 0.0f;          // 0: none (Gemma2)
    float final_logit_softcap = 0.0f;         // 0: none; logits = cap * tanh(logits / cap) (Gemma2)
    bool sandwich_norms = false;              // Gemma2/3: post_attention_norm on the attention output, then
                                              // pre_feedforward_norm before and post_feedforward_norm after the MLP
    bool qk_norm = false;                     // norm over head_dim of each q/k head before rotary (Qwen3, Gemma3)
    bool qk_norm_per_head = false;            // one weight vector per head (StableLM); else one shared [head_dim]
    bool gated_mlp = true;                    // false: down(act(up(x))) (Starcoder2 c_fc/c_proj, Nemotron)
    bool parallel_residual = false;           // x + attn(norm(x)) + mlp(norm(x)), one norm (StableLM)
    bool fused_qkv = false;                   // one qkv_proj tensor split at load (Phi3)
    bool fused_gate_up = false;               // one gate_up_proj tensor split at load (Phi3)
    std::vector<LayerAttention> layer_types;  // when set, overrides config.layer_types (Gemma2/3 4.x configs)

    // GPT-style families (g-gpt). Defaults keep the families above unchanged.
    PositionEncoding positions = PositionEncoding::kRotary;
    int64_t position_offset = 0;  // learned: position p reads row p + offset (OPT: 2)
    // ALiBi: false: q.k * scale + slope * (j - i) (Bloom); true: (q.k + bf16(bf16(slope) * j)) * scale, the
    // bfloat16 ALiBi tensor of transformers' Falcon.
    bool alibi_scaled = false;
    QkvLayout qkv_layout = QkvLayout::kConcatenated;  // with fused_qkv
    bool transposed_linears = false;                  // GPT-2's Conv1D stores [in, out]: transposed copies at load
    bool parallel_mlp_norm = false;  // with parallel_residual: the MLP reads post_attention_norm(x) instead of
                                     // sharing input_norm(x) (GPT-NeoX, Falcon ln_attn / ln_mlp)
    bool post_norm = false;          // x = norm1(x + attn(x)); x = norm2(x + mlp(x)) (OPT do_layer_norm_before=false)
    bool lm_head_bias = false;       // GPT-J, Phi
    bool scale_attn_by_inverse_layer_idx = false;  // scores of layer l also divided by l + 1 (GPT-2 option)
    int64_t embed_dim = 0;                         // 0: hidden_size; else the width of embed / lm_head (OPT)
    // transformers' base_model_prefix ("transformer", "model"): checkpoints saved from the bare model (the
    // original gpt2, opt-125m, bloom) name tensors without it; a name not found is looked up without it.
    std::string base_model_prefix;

    // MoE
    MoeSpec moe;  // moe.num_experts 0: every layer has the dense MLP

    // Remote-code families (g-remote)
    bool norm_head = false;  // lm_head rows scaled to unit L2 norm at load (Baichuan2's NormHead), kept in f32
};

// The activation named by config.json's `hidden_act`, or an error naming it.
Result<ops::Activation> activation_from_name(const std::string& hidden_act, const std::string& source);

}  // namespace taco
