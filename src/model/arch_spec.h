// ArchSpec: an architecture described as data for the one generic decoder (ARCHITECTURE.md, "Architectures
// are data"): embedding -> N x [norm, attention, norm, MLP] -> norm -> lm_head. A new family is one file in
// model/archs/ returning its ArchSpec, plus one line in arch_registry.cc, plus one golden test.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/ops.h"
#include "model/model_config.h"

namespace taco {

enum class NormKind { kRmsNorm, kLayerNorm };

// GPT-style families
// How positions enter: rotary on q/k, a learned table added to the embeddings, or ALiBi biases on the scores.
enum class PositionEncoding { kRotary, kLearned, kAlibi };
// Rows of a fused qkv projection ([(heads + 2 * kv_heads) * head_dim, hidden]), split into q, k, v at load.
//   kSeparate: no fused tensor (q_proj, k_proj, v_proj);  kConcatenated: [q | k | v];
//   kPerHead: per head [q_h | k_h | v_h] (GPT-NeoX, Bloom; needs kv_heads == heads);
//   kPerKvGroup: per kv head g, [q of the heads of group g | k_g | v_g] (Falcon's new decoder architecture).
enum class QkvLayout { kSeparate, kConcatenated, kPerHead, kPerKvGroup };
// How a layer combines attention, MLP and the residual stream (x):
//   kSequential: x += attn(norm1(x)); x += mlp(norm2(x))            (Llama, GPT-2, OPT pre-norm)
//   kSequentialPostNorm: x = norm1(x + attn(x)); x = norm2(x + mlp(x))  (OPT with do_layer_norm_before=false)
//   kParallel: x += attn(norm1(x)) + mlp(norm2(x))                    (GPT-NeoX, Falcon with ln_attn/ln_mlp)
//   kParallelSharedNorm: h = norm1(x); x += attn(h) + mlp(h)          (GPT-J, Phi, Falcon parallel_attn)
enum class ResidualKind { kSequential, kSequentialPostNorm, kParallel, kParallelSharedNorm };

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
    // GPT-style families: empty means the model has no such tensor.
    std::string qkv_proj;     // fused q/k/v projection (ArchSpec::qkv_layout), without ".weight"
    std::string pos_embed;    // learned position table [max_positions + position_offset, hidden]
    std::string embed_norm;   // LayerNorm right after the embedding (Bloom)
    std::string project_in;   // [hidden, embed_dim] after the embedding (OPT word_embed_proj_dim), no bias
    std::string project_out;  // [embed_dim, hidden] before the head, no bias
    std::string q_norm;       // per-head norm of q over head_dim (Phi qk_layernorm), ".weight" included
    std::string k_norm;
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

    // GPT-style families. Norm names above end in ".weight"; with norm_bias the ".bias" beside each is read.
    // An empty names.final_norm / names.post_attention_norm means the model has none.
    PositionEncoding positions = PositionEncoding::kRotary;
    int64_t position_offset = 0;  // learned: position p reads row p + offset (OPT: 2)
    bool alibi_scaled = false;    // ALiBi: false: qk * scale + bias (Bloom); true: (qk + bias) * scale (Falcon)
    QkvLayout qkv_layout = QkvLayout::kSeparate;
    bool transposed_linears = false;  // GPT-2's Conv1D stores weights [in, out]: transposed copies at load
    bool norm_bias = false;
    bool gated_mlp = true;  // false: down(act(up(x))), no gate_proj
    ResidualKind residual = ResidualKind::kSequential;
    bool lm_head_bias = false;
    bool scale_attn_weights = true;                // false: scores are not divided by sqrt(head_dim) (GPT-2)
    bool scale_attn_by_inverse_layer_idx = false;  // scores of layer l divided by l + 1 (GPT-2)
    int64_t embed_dim = 0;                         // 0: hidden_size; else the width of embed/lm_head (OPT)
    // transformers' base_model_prefix ("transformer", "model"): checkpoints saved from the bare model (the
    // original gpt2, opt-125m, bloom) name tensors without it; a name not found is looked up without it.
    std::string base_model_prefix;
};

// The activation named by config.json's `hidden_act`, or an error naming it.
Result<ops::Activation> activation_from_name(const std::string& hidden_act, const std::string& source);

}  // namespace taco
