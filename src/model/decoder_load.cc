// Decoder::load and Decoder::bind_weights: a model folder's config and checkpoint into the decoder's weights.
#include <memory>
#include <string>
#include <utility>

#include "core/allocator.h"
#include "model/alibi.h"
#include "model/arch_registry.h"
#include "model/decoder.h"
#include "model/norm_head.h"
#include "model/weight_binder.h"

namespace taco {

Decoder::~Decoder() = default;

Result<std::unique_ptr<Decoder>> Decoder::load(const std::string& dir) {
    TACO_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::load_dir(dir));
    return load(dir, std::move(config));
}

Result<std::unique_ptr<Decoder>> Decoder::load(const std::string& dir, ModelConfig config) {
    std::unique_ptr<Decoder> decoder(new Decoder());
    decoder->config_ = std::move(config);
    TACO_ASSIGN_OR_RETURN(decoder->spec_, arch_spec_for(decoder->config_));
    TACO_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open_dir(dir));
    decoder->checkpoint_ = std::make_unique<Checkpoint>(std::move(checkpoint));
    WeightBinder binder(*decoder->checkpoint_, decoder->spec_);
    TACO_RETURN_IF_ERROR(decoder->bind_weights(binder));
    decoder->weight_dtype_ = decoder->config_.dtype.value_or(decoder->embed_.dtype);
    return decoder;
}

Result<std::unique_ptr<Decoder>> Decoder::load(const std::string& dir, const LoadOptions& options) {
    TACO_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::load_dir(dir));
    if (!options.dummy) {
        TACO_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> decoder, load(dir, std::move(config)));
        if (options.device == Device::kCpu && !options.dtype) return decoder;  // served as stored, from the mapping
        TACO_RETURN_IF_ERROR(decoder->place_weights(options, decoder->weight_dtype_));
        // On a device every weight the forward pass reads is a copy: the mapping can go.
        if (options.device != Device::kCpu) decoder->checkpoint_.reset();
        return decoder;
    }
    std::unique_ptr<Decoder> decoder(new Decoder());
    decoder->config_ = std::move(config);
    TACO_ASSIGN_OR_RETURN(decoder->spec_, arch_spec_for(decoder->config_));
    // The weights a checkpoint of this config would hold: its saved dtype (bf16 when it names none).
    DType stored = decoder->config_.dtype.value_or(DType::kBF16);
    if (!dtype_is_float(stored)) stored = DType::kBF16;
    decoder->dummy_ = std::make_unique<DummyWeights>(stored, options.dummy_seed, host_available_bytes());
    WeightBinder binder(*decoder->dummy_, decoder->spec_);
    TACO_RETURN_IF_ERROR(decoder->bind_weights(binder));
    TACO_RETURN_IF_ERROR(decoder->place_weights(options, stored));
    if (options.device != Device::kCpu) decoder->dummy_->release();
    return decoder;
}

Status Decoder::bind_weights(WeightBinder& binder) {
    const ModelConfig& c = config_;
    const WeightNames& n = spec_.names;
    const int64_t q_size = c.num_attention_heads * c.head_dim;
    const int64_t kv_size = c.num_key_value_heads * c.head_dim;
    const int64_t embed_dim = spec_.embedding.dim > 0 ? spec_.embedding.dim : c.hidden_size;
    TACO_ASSIGN_OR_RETURN(embed_, binder.matrix(n.embed, c.vocab_size, embed_dim));
    if (!n.final_norm.empty()) {
        TACO_RETURN_IF_ERROR(binder.norm(n.final_norm, c.hidden_size, final_norm_, &final_norm_bias_));
    }
    // Tied heads: transformers drops lm_head.weight when saving, but some checkpoints keep a copy.
    if (spec_.head.tied_embeddings && (binder.is_dummy() || !binder.contains(n.lm_head))) {
        lm_head_ = embed_;
    } else {
        TACO_ASSIGN_OR_RETURN(lm_head_, binder.matrix(n.lm_head, c.vocab_size, embed_dim));
    }
    // GPT-style families
    if (spec_.head.bias) {
        const std::string stem = n.lm_head.ends_with(".weight") ? n.lm_head.substr(0, n.lm_head.size() - 7) : n.lm_head;
        TACO_ASSIGN_OR_RETURN(lm_head_bias_, binder.vector(stem + ".bias", c.vocab_size));
    }
    if (spec_.head.norm_head) {
        lm_head_normalized_ = rows_l2_normalized(lm_head_);
        lm_head_ = lm_head_normalized_.view();
    }
    if (!n.pos_embed.empty()) {
        TACO_ASSIGN_OR_RETURN(
            pos_embed_,
            binder.matrix(n.pos_embed, c.max_position_embeddings + spec_.embedding.position_offset, c.hidden_size));
    }
    if (!n.embed_norm.empty()) {
        TACO_RETURN_IF_ERROR(binder.norm(n.embed_norm, c.hidden_size, embed_norm_, &embed_norm_bias_));
    }
    if (!n.project_in.empty()) {
        TACO_ASSIGN_OR_RETURN(project_in_, binder.linear(n.project_in, c.hidden_size, embed_dim, false));
        TACO_ASSIGN_OR_RETURN(project_out_, binder.linear(n.project_out, embed_dim, c.hidden_size, false));
    }
    if (spec_.attention.positions == PositionEncoding::kAlibi) {
        std::vector<float> slopes = alibi_slopes(c.num_attention_heads);
        // Falcon rounds its slopes to bfloat16 before use.
        if (spec_.attention.alibi_scaled)
            for (float& slope : slopes) slope = bf16_to_f32(f32_to_bf16(slope));
        alibi_slopes_ = Tensor::empty({c.num_attention_heads}, DType::kF32);
        std::copy(slopes.begin(), slopes.end(), alibi_slopes_.as<float>());
    }
    layers_.resize(size_t(c.num_hidden_layers));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        DecoderLayerWeights& w = layers_[size_t(l)];
        auto name = [l](const std::string& pattern) { return layer_name(pattern, l); };
        TACO_RETURN_IF_ERROR(binder.norm(name(n.input_norm), c.hidden_size, w.input_norm, &w.input_norm_bias));
        auto bind_post_attention_norm = [&] {
            return binder.norm(name(n.post_attention_norm), c.hidden_size, w.post_attention_norm,
                               &w.post_attention_norm_bias);
        };
        switch (spec_.residual) {
            case ResidualLayout::kSequential:
            case ResidualLayout::kParallelOwnNorms:
            case ResidualLayout::kPostNorm: TACO_RETURN_IF_ERROR(bind_post_attention_norm()); break;
            case ResidualLayout::kSandwich:
                TACO_RETURN_IF_ERROR(bind_post_attention_norm());
                TACO_RETURN_IF_ERROR(
                    binder.norm(name(n.pre_feedforward_norm), c.hidden_size, w.pre_feedforward_norm, nullptr));
                TACO_RETURN_IF_ERROR(
                    binder.norm(name(n.post_feedforward_norm), c.hidden_size, w.post_feedforward_norm, nullptr));
                break;
            case ResidualLayout::kParallelSharedNorm: break;  // the MLP reads input_norm's output too
        }
        if (spec_.attention.fused_qkv &&
            (spec_.attention.qkv_layout != QkvLayout::kConcatenated || spec_.transposed_linears)) {
            TACO_RETURN_IF_ERROR(binder.regrouped_qkv(name(n.qkv_proj), c.num_attention_heads, c.num_key_value_heads,
                                                      c.head_dim, c.hidden_size, spec_.attention.qkv_bias, w));
        } else if (spec_.attention.fused_qkv) {
            TACO_ASSIGN_OR_RETURN(auto qkv, binder.split_linear(name(n.qkv_proj), {q_size, kv_size, kv_size},
                                                                c.hidden_size, spec_.attention.qkv_bias));
            w.q = std::move(qkv[0]), w.k = std::move(qkv[1]), w.v = std::move(qkv[2]);
        } else {
            TACO_ASSIGN_OR_RETURN(w.q, binder.linear(name(n.q_proj), q_size, c.hidden_size, spec_.attention.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.k, binder.linear(name(n.k_proj), kv_size, c.hidden_size, spec_.attention.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.v, binder.linear(name(n.v_proj), kv_size, c.hidden_size, spec_.attention.qkv_bias));
        }
        TACO_ASSIGN_OR_RETURN(w.o, binder.linear(name(n.o_proj), c.hidden_size, q_size, spec_.attention.o_bias));
        if (spec_.attention.qk_norm) TACO_RETURN_IF_ERROR(bind_qk_norms(binder, c, spec_, l, w));
        if (spec_.moe.is_sparse(l)) {
            TACO_ASSIGN_OR_RETURN(
                MoeBlock moe, MoeBlock::bind(spec_.moe, l, c.hidden_size, spec_.mlp.activation, binder.moe_source()));
            w.moe = std::make_shared<const MoeBlock>(std::move(moe));
        } else {
            if (spec_.mlp.fused_gate_up) {
                TACO_ASSIGN_OR_RETURN(
                    auto gate_up, binder.split_linear(name(n.gate_up_proj), {c.intermediate_size, c.intermediate_size},
                                                      c.hidden_size, spec_.mlp.bias));
                w.gate = std::move(gate_up[0]), w.up = std::move(gate_up[1]);
            } else {
                if (spec_.mlp.gated) {
                    TACO_ASSIGN_OR_RETURN(
                        w.gate, binder.linear(name(n.gate_proj), c.intermediate_size, c.hidden_size, spec_.mlp.bias));
                }
                TACO_ASSIGN_OR_RETURN(
                    w.up, binder.linear(name(n.up_proj), c.intermediate_size, c.hidden_size, spec_.mlp.bias));
            }
            TACO_ASSIGN_OR_RETURN(w.down,
                                  binder.linear(name(n.down_proj), c.hidden_size, c.intermediate_size, spec_.mlp.bias));
        }
        const auto& layer_types = spec_.attention.layer_types.empty() ? c.layer_types : spec_.attention.layer_types;
        bool sliding = spec_.attention.uses_sliding_window && layer_types[size_t(l)] == LayerAttention::kSliding;
        w.sliding_window = sliding ? int(c.sliding_window) : 0;
        w.local_rotary = sliding && c.rope_local.has_value();
    }
    return binder.check_all_used().with_context(spec_.name);
}

}  // namespace taco
