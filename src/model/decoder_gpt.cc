// The parts of the generic decoder that GPT-style families add: learned positions, project_in / project_out,
// the embedding LayerNorm, parallel and post-norm residuals, per-head q/k norms and the head's bias.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/decoder.h"

namespace taco {

int64_t Decoder::max_positions() const {
    return pos_embed_.data != nullptr ? pos_embed_.shape[0] - spec_.position_offset : INT64_MAX;
}

void Decoder::embed_tokens(const ForwardBatch& batch, const TensorView& hidden) {
    const int64_t t = batch.num_tokens();
    if (project_in_.weight.data == nullptr) {
        ops::embedding(batch.token_ids, embed_, hidden);
    } else {
        Tensor embedded = Tensor::empty({t, embed_.shape[1]}, DType::kF32);
        ops::embedding(batch.token_ids, embed_, embedded);
        ops::matmul(embedded, project_in_.weight, nullptr, hidden);
    }
    if (pos_embed_.data != nullptr) {
        std::vector<int32_t> rows(static_cast<size_t>(t));
        for (int64_t i = 0; i < t; ++i) {
            const int64_t row = int64_t(batch.attention.positions[size_t(i)]) + spec_.position_offset;
            TACO_CHECK_MSG(row >= 0 && row < pos_embed_.shape[0], "position {} is past the {} learned positions of {}",
                           batch.attention.positions[size_t(i)], pos_embed_.shape[0] - spec_.position_offset,
                           spec_.name);
            rows[size_t(i)] = int32_t(row);
        }
        Tensor positions = Tensor::empty({t, config_.hidden_size}, DType::kF32);
        ops::embedding(rows, pos_embed_, positions);
        ops::add_inplace(hidden, positions);
    }
    if (embed_norm_.defined()) {
        Tensor normed = Tensor::empty({t, config_.hidden_size}, DType::kF32);
        norm(hidden, embed_norm_, embed_norm_bias_, normed);
        std::copy_n(normed.as<float>(), normed.numel(), hidden.as<float>());
    }
}

void Decoder::gpt_layer(const DecoderLayerWeights& w, int64_t layer_index, const ForwardBatch& batch,
                        KvCacheTensors& kv, const TensorView& hidden) {
    const int64_t t = batch.num_tokens(), size = config_.hidden_size;
    Tensor normed = Tensor::empty({t, size}, DType::kF32);
    Tensor attn_out = Tensor::empty({t, size}, DType::kF32);
    Tensor mlp_out = Tensor::empty({t, size}, DType::kF32);
    auto norm_into_hidden = [&](const Tensor& weight, const Tensor& bias) {
        norm(hidden, weight, bias, normed);
        std::copy_n(normed.as<float>(), normed.numel(), hidden.as<float>());
    };
    switch (spec_.residual) {
        case ResidualKind::kSequential:
            TACO_CHECK_MSG(false, "sequential pre-norm layers run in Decoder::forward");
            return;
        case ResidualKind::kSequentialPostNorm:
            attention_block(w, layer_index, batch, kv, hidden, attn_out);
            ops::add_inplace(hidden, attn_out);
            norm_into_hidden(w.input_norm, w.input_norm_bias);
            mlp_block(w, hidden, mlp_out);
            ops::add_inplace(hidden, mlp_out);
            norm_into_hidden(w.post_attention_norm, w.post_attention_norm_bias);
            return;
        case ResidualKind::kParallel:
            norm(hidden, w.input_norm, w.input_norm_bias, normed);
            attention_block(w, layer_index, batch, kv, normed, attn_out);
            norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
            mlp_block(w, normed, mlp_out);
            break;
        case ResidualKind::kParallelSharedNorm:
            norm(hidden, w.input_norm, w.input_norm_bias, normed);
            attention_block(w, layer_index, batch, kv, normed, attn_out);
            mlp_block(w, normed, mlp_out);
            break;
    }
    // (mlp + attn) + x, the order of GPT-NeoX and Falcon.
    ops::add_inplace(mlp_out, attn_out);
    ops::add_inplace(hidden, mlp_out);
}

void Decoder::logits_head(const TensorView& selected, const TensorView& logits) {
    const int64_t rows = selected.shape[0];
    const TensorView* x = &selected;
    Tensor normed, projected;
    if (final_norm_.defined()) {
        normed = Tensor::empty({rows, config_.hidden_size}, DType::kF32);
        norm(selected, final_norm_, final_norm_bias_, normed);
        x = &normed.view();
    }
    if (project_out_.weight.data != nullptr) {
        projected = Tensor::empty({rows, project_out_.weight.shape[0]}, DType::kF32);
        ops::matmul(*x, project_out_.weight, nullptr, projected);
        x = &projected.view();
    }
    ops::matmul(*x, lm_head_, lm_head_bias_.defined() ? &lm_head_bias_.view() : nullptr, logits);
}

float Decoder::attention_scale(int64_t layer_index) const {
    double scale = spec_.scale_attn_weights ? 1.0 / std::sqrt(double(config_.head_dim)) : 1.0;
    if (spec_.scale_attn_by_inverse_layer_idx) scale /= double(layer_index + 1);
    return float(scale);
}

// Phi's qk_layernorm: a LayerNorm over head_dim of every q and k head, before rotary.
void Decoder::qk_norm(const DecoderLayerWeights& w, const TensorView& q3, const TensorView& k3) const {
    for (auto [x, weight, bias] :
         {std::tuple{&q3, &w.q_norm, &w.q_norm_bias}, std::tuple{&k3, &w.k_norm, &w.k_norm_bias}}) {
        const int64_t rows = x->shape[0] * x->shape[1], head_dim = x->shape[2];
        TensorView flat(x->data, DType::kF32, {rows, head_dim});
        Tensor normed = Tensor::empty({rows, head_dim}, DType::kF32);
        norm(flat, *weight, *bias, normed);
        std::copy_n(normed.as<float>(), normed.numel(), flat.as<float>());
    }
}

}  // namespace taco
