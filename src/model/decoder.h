// The generic decoder (ARCHITECTURE.md): embedding -> N x [norm, attention, norm, MLP] -> norm -> lm_head,
// parameterised by an ArchSpec. Weights stay in their on-disk dtype in the mmapped checkpoint and are widened
// to fp32 in registers; small vectors (norms, biases) are copied to fp32 at load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/arch_spec.h"
#include "model/decoder_layer_weights.h"
#include "model/forward_batch.h"
#include "model/kv_cache_tensors.h"
#include "model/model_config.h"
#include "model/rotary_tables.h"

namespace taco {

class Decoder {
public:
    // Loads config.json, generation_config.json and the safetensors of a model folder. Every tensor the
    // architecture needs must be present with the right shape, and every tensor present must be used.
    static Result<std::unique_ptr<Decoder>> load(const std::string& dir);
    static Result<std::unique_ptr<Decoder>> load(const std::string& dir, ModelConfig config);

    const ModelConfig& config() const { return config_; }
    const ArchSpec& spec() const { return spec_; }
    // The most positions a sequence can have: the learned position table's rows, else unlimited (INT64_MAX).
    int64_t max_positions() const;

    // Runs the batch, writing its K/V into `kv`; returns logits [logits_indices.size(), vocab] f32.
    Tensor forward(const ForwardBatch& batch, KvCacheTensors& kv);

private:
    Decoder() = default;
    Status bind_weights();
    void attention_block(const DecoderLayerWeights& layer, int64_t layer_index, const ForwardBatch& batch,
                         KvCacheTensors& kv, const TensorView& x, const TensorView& out);
    void mlp_block(const DecoderLayerWeights& layer, const TensorView& x, const TensorView& out);
    void norm(const TensorView& x, const Tensor& weight, const Tensor& bias, const TensorView& out) const;
    // x: [T, heads, head_dim], in place; bias undefined for none.
    void qk_norm(const Tensor& weight, const Tensor& bias, const TensorView& x) const;
    void apply_rotary(const DecoderLayerWeights& layer, const ForwardBatch& batch, const TensorView& x) const;
    // GPT-style families (decoder_gpt.cc)
    void embed_tokens(const ForwardBatch& batch, const TensorView& hidden);  // embedding, project_in, positions
    void post_norm_layer(const DecoderLayerWeights& layer, int64_t layer_index, const ForwardBatch& batch,
                         KvCacheTensors& kv, const TensorView& hidden);
    float attention_scale(int64_t layer_index) const;

    ModelConfig config_;
    ArchSpec spec_;
    std::unique_ptr<Checkpoint> checkpoint_;  // owns the mappings the views point into
    TensorView embed_;                        // [vocab, hidden]
    TensorView lm_head_;                      // [vocab, hidden]
    Tensor final_norm_;                       // [hidden] f32
    std::vector<DecoderLayerWeights> layers_;
    std::unique_ptr<RotaryTables> rotary_;
    // Llama-style families
    Tensor final_norm_bias_;                      // [hidden] f32 when NormSpec::bias
    std::unique_ptr<RotaryTables> rotary_local_;  // sliding layers' rope (Gemma3), else null
    std::unique_ptr<RotaryTables> rotary_long_;   // LongRoPE's long factors, else null
    // GPT-style families
    TensorView pos_embed_;                    // [max_positions + position_offset, hidden], learned positions only
    Tensor embed_norm_, embed_norm_bias_;     // [hidden] f32 (Bloom)
    LinearWeights project_in_, project_out_;  // OPT with word_embed_proj_dim != hidden_size
    Tensor lm_head_bias_;                     // [vocab] f32
    std::vector<float> alibi_slopes_;         // [heads], ALiBi only (rounded to bfloat16 when alibi_scaled)
    // Remote-code families
    Tensor lm_head_normalized_;  // [vocab, hidden] f32, HeadSpec::norm_head only; lm_head_ views it
};

}  // namespace taco
