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

// How positions enter: rotary on q/k, a learned table added to the embeddings, or ALiBi biases on the scores.
enum class PositionEncoding { kRotary, kLearned, kAlibi };
// Rows of a fused qkv projection ([(heads + 2 * kv_heads) * head_dim, hidden], AttentionSpec::fused_qkv):
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
    // Norm names end in ".weight"; a norm's bias is the same name with ".bias".
    std::string pre_feedforward_norm = "model.layers.{}.pre_feedforward_layernorm.weight";    // kSandwich only
    std::string post_feedforward_norm = "model.layers.{}.post_feedforward_layernorm.weight";  // kSandwich only
    // Per-head q/k norms; "{h}" stands for the head index when AttentionSpec::qk_norm_per_head.
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

// How a layer's attention and MLP join the residual stream x. norm1 is names.input_norm, norm2
// names.post_attention_norm, norm3 / norm4 names.pre_feedforward_norm / names.post_feedforward_norm.
enum class ResidualLayout {
    kSequential,          // x += attn(norm1(x)); x += mlp(norm2(x))  (Llama and most families)
    kSandwich,            // x += norm2(attn(norm1(x))); x += norm4(mlp(norm3(x)))  (Gemma2/3)
    kParallelSharedNorm,  // x += attn(norm1(x)); x += mlp(norm1(x)) with norm1(x) taken once: no norm2
                          // (GPT-J, Phi, StableLM use_parallel_residual, Falcon parallel_attn with one norm)
    kParallelOwnNorms,    // x += attn(norm1(x)); x += mlp(norm2(x)) with both norms of the x before attention
                          // (GPT-NeoX, Falcon ln_attn / ln_mlp)
    kPostNorm,            // x = norm1(x + attn(x)); x = norm2(x + mlp(x))  (OPT do_layer_norm_before = false)
};

// Every norm of the model: the layers', the final one, the embedding's (Bloom) and the q/k norms.
struct NormSpec {
    NormKind kind = NormKind::kRmsNorm;
    float weight_offset = 0.0f;  // Gemma stores (weight - 1)
    bool bias = false;           // LayerNorm with a bias (StableLM, Starcoder2, Nemotron, GPT-style families)
    std::optional<double> eps;   // else config.rms_norm_eps (layer_norm_eps, norm_epsilon, ... differ)
};

struct AttentionSpec {
    bool qkv_bias = false;
    bool o_bias = false;
    bool fused_qkv = false;                           // one qkv_proj tensor split at load (Phi3)
    QkvLayout qkv_layout = QkvLayout::kConcatenated;  // with fused_qkv
    bool qk_norm = false;           // norm over head_dim of each q/k head before rotary (Qwen3, Gemma3)
    bool qk_norm_per_head = false;  // one weight vector per head (StableLM); else one shared [head_dim]
    // How positions enter: rotary on q/k, a learned table added to the embeddings, or ALiBi biases on the scores.
    PositionEncoding positions = PositionEncoding::kRotary;
    bool neox_rotary = true;  // rotate halves (HF Llama); false: interleaved pairs
    // ALiBi: false: q.k * scale + slope * (j - i) (Bloom); true: (q.k + bf16(bf16(slope) * j)) * scale, the
    // bfloat16 ALiBi tensor of transformers' Falcon.
    bool alibi_scaled = false;
    float scale = 0.0f;                       // 0: 1 / sqrt(head_dim); Gemma2/3: query_pre_attn_scalar^-0.5
    bool scale_by_inverse_layer_idx = false;  // scores of layer l also divided by l + 1 (GPT-2 option)
    float logit_softcap = 0.0f;               // 0: none (Gemma2)
    bool uses_sliding_window = false;         // honour config.sliding_window / layer_types
    std::vector<LayerAttention> layer_types;  // when set, overrides config.layer_types (Gemma2/3 4.x configs)
};

// The dense MLP; activation is the experts' too.
struct MlpSpec {
    ops::Activation activation = ops::Activation::kSilu;
    bool bias = false;
    bool gated = true;           // false: down(act(up(x))) (Starcoder2 c_fc/c_proj, Nemotron, GPT-style families)
    bool fused_gate_up = false;  // one gate_up_proj tensor split at load (Phi3)
};

struct EmbeddingSpec {
    bool scale = false;           // embeddings x sqrt(hidden) in fp32 (Gemma)
    int64_t dim = 0;              // 0: hidden_size; else the width of embed / lm_head (OPT word_embed_proj_dim)
    int64_t position_offset = 0;  // learned positions: position p reads row p + offset (OPT: 2)
};

struct HeadSpec {
    bool tied_embeddings = false;      // lm_head reads the embedding table
    bool bias = false;                 // GPT-J, Phi
    float final_logit_softcap = 0.0f;  // 0: none; logits = cap * tanh(logits / cap) (Gemma2)
    bool norm_head = false;            // rows scaled to unit L2 norm at load (Baichuan2's NormHead), kept in f32
};

struct ArchSpec {
    std::string name;  // the HF `architectures` name
    NormSpec norm;
    AttentionSpec attention;
    MlpSpec mlp;
    EmbeddingSpec embedding;
    HeadSpec head;
    ResidualLayout residual = ResidualLayout::kSequential;
    MoeSpec moe;  // moe.num_experts 0: every layer has the dense MLP

    WeightNames names;
    // Checkpoint tensors that carry no weights (e.g. old "rotary_emb.inv_freq" buffers): suffixes.
    std::vector<std::string> ignored_tensor_suffixes = {"rotary_emb.inv_freq"};
    bool transposed_linears = false;  // GPT-2's Conv1D stores [in, out]: transposed copies at load
    // transformers' base_model_prefix ("transformer", "model"): checkpoints saved from the bare model (the
    // original gpt2, opt-125m, bloom) name tensors without it; a name not found is looked up without it.
    std::string base_model_prefix;
};

// The activation named by config.json's `hidden_act`, or an error naming it.
Result<ops::Activation> activation_from_name(const std::string& hidden_act, const std::string& source);

}  // namespace taco
