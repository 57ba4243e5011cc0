// The weights of one decoder layer as the generic decoder reads them: views into the mmapped checkpoint for
// matrices, f32 copies for norms and biases (WeightBinder fills them in at load).
#pragma once

#include <memory>

#include "core/tensor.h"
#include "model/moe_block.h"

namespace taco {

struct LinearWeights {
    TensorView weight;  // [out, in] on-disk dtype
    Tensor bias;        // [out] f32, undefined when the layer has none
    Tensor storage;     // owns `weight` when it was rearranged at load (Conv1D transposed, fused qkv regrouped)
    const TensorView* bias_or_null() const { return bias.defined() ? &bias.view() : nullptr; }
};

struct DecoderLayerWeights {
    Tensor input_norm;           // [hidden] f32
    Tensor post_attention_norm;  // [hidden] f32
    LinearWeights q, k, v,
        o;  // q: [heads * head_dim, hidden]; k, v: [kv_heads * head_dim, hidden]; o: [hidden, heads * head_dim]
    LinearWeights gate, up, down;  // gate, up: [intermediate, hidden]; down: [hidden, intermediate]
    int sliding_window = 0;        // 0: full attention on this layer

    // Llama-style families
    Tensor input_norm_bias, post_attention_norm_bias;    // [hidden] f32 when NormSpec::bias
    Tensor pre_feedforward_norm, post_feedforward_norm;  // [hidden] f32 with ResidualLayout::kSandwich
    Tensor q_norm, k_norm;      // [head_dim] f32; [heads | kv_heads, head_dim] when AttentionSpec::qk_norm_per_head
    bool local_rotary = false;  // a sliding layer of a model with its own local rope (Gemma3)

    // GPT-style families
    Tensor q_norm_bias, k_norm_bias;  // [head_dim] f32 when qk_norm with NormSpec::bias (Phi qk_layernorm)

    // MoE
    std::shared_ptr<const MoeBlock> moe;  // set on sparse layers, which have no dense gate/up/down
};

}  // namespace taco
