// The parts of the generic decoder that GPT-style families add: learned positions, project_in, the embedding
// LayerNorm, post-norm layers and per-layer attention scaling.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/decoder.h"

namespace taco {

int64_t Decoder::max_positions() const {
    return pos_embed_.data != nullptr ? pos_embed_.shape[0] - spec_.embedding.position_offset : INT64_MAX;
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
            const int64_t row = int64_t(batch.attention.positions[size_t(i)]) + spec_.embedding.position_offset;
            TACO_CHECK_MSG(row >= 0 && row < pos_embed_.shape[0], "position {} is past the {} learned positions of {}",
                           batch.attention.positions[size_t(i)], max_positions(), spec_.name);
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

// OPT with do_layer_norm_before = false: x = norm1(x + attn(x)); x = norm2(x + mlp(x)).
void Decoder::post_norm_layer(const DecoderLayerWeights& w, int64_t layer_index, const ForwardBatch& batch,
                              KvCacheTensors& kv, const TensorView& hidden) {
    const int64_t t = batch.num_tokens(), size = config_.hidden_size;
    Tensor block_out = Tensor::empty({t, size}, DType::kF32);
    Tensor normed = Tensor::empty({t, size}, DType::kF32);
    attention_block(w, layer_index, batch, kv, hidden, block_out);
    ops::add_inplace(hidden, block_out);
    norm(hidden, w.input_norm, w.input_norm_bias, normed);
    std::copy_n(normed.as<float>(), normed.numel(), hidden.as<float>());
    mlp_block(w, hidden, block_out);
    ops::add_inplace(hidden, block_out);
    norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
    std::copy_n(normed.as<float>(), normed.numel(), hidden.as<float>());
}

float Decoder::attention_scale(int64_t layer_index) const {
    double scale =
        spec_.attention.scale > 0 ? double(spec_.attention.scale) : 1.0 / std::sqrt(double(config_.head_dim));
    if (spec_.attention.scale_by_inverse_layer_idx) scale /= double(layer_index + 1);
    return float(scale);
}

}  // namespace taco
