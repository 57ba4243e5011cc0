#include "model/decoder.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/ops.h"

namespace taco {

// Norm weights hold the stored offset already (WeightBinder::norm).
void Decoder::norm(const TensorView& x, const Tensor& weight, const Tensor& bias, const TensorView& out) const {
    const float eps = float(spec_.norm.eps.value_or(config_.rms_norm_eps));
    switch (spec_.norm.kind) {
        case NormKind::kRmsNorm: ops::rms_norm(x, weight, eps, 0.0f, out); return;
        case NormKind::kLayerNorm:
            ops::layer_norm(x, weight, bias.defined() ? &bias.view() : nullptr, eps, out);
            return;
    }
}

void Decoder::qk_norm(const Tensor& weight, const Tensor& bias, const TensorView& x) const {
    const float eps = float(spec_.norm.eps.value_or(config_.rms_norm_eps));
    if (spec_.attention.qk_norm_per_head) {
        TACO_CHECK(spec_.norm.kind == NormKind::kLayerNorm);  // StableLM's LayerNorm per head, no bias
        ops::per_head_layer_norm(x, weight, nullptr, eps);
        return;
    }
    TensorView rows(x.data, DType::kF32, {x.shape[0] * x.shape[1], x.shape[2]});
    switch (spec_.norm.kind) {
        case NormKind::kRmsNorm: ops::rms_norm(rows, weight, eps, 0.0f, rows); return;
        case NormKind::kLayerNorm:
            ops::layer_norm(rows, weight, bias.defined() ? &bias.view() : nullptr, eps, rows);
            return;
    }
}

// Positions pick the table rows; the table is the layer's (Gemma3 local layers have their own), and with LongRoPE
// each sequence's whole length picks short or long factors (ForwardBatch::max_lengths; without it, the longest
// position of the sequence in this batch, as transformers' one-pass prefill).
void Decoder::apply_rotary(const DecoderLayerWeights& w, const ForwardBatch& batch, const TensorView& x) const {
    const RotaryTables& table = w.local_rotary ? *rotary_local_ : *rotary_;
    const auto& positions = batch.attention.positions;
    if (rotary_long_ == nullptr || w.local_rotary) {
        ops::rotary_embedding(x, positions, table.cos_table(), table.sin_table(), table.rotary_dim(),
                              spec_.attention.neox_rotary);
        return;
    }
    const int64_t threshold = rotary_->frequencies().long_rope_threshold;
    const int64_t row = x.shape[1] * x.shape[2];
    for (int64_t s = 0; s < batch.num_sequences(); ++s) {
        const int32_t begin = batch.attention.query_start[size_t(s)], end = batch.attention.query_start[size_t(s) + 1];
        if (begin == end) continue;
        int64_t length = 0;
        if (!batch.max_lengths.empty()) {
            length = batch.max_lengths[size_t(s)];
        } else {
            for (int32_t t = begin; t < end; ++t) length = std::max<int64_t>(length, positions[size_t(t)] + 1);
        }
        const RotaryTables& chosen = length > threshold ? *rotary_long_ : table;
        TensorView part(x.as<float>() + begin * row, DType::kF32, {end - begin, x.shape[1], x.shape[2]});
        std::vector<int32_t> part_positions(positions.begin() + begin, positions.begin() + end);
        ops::rotary_embedding(part, part_positions, chosen.cos_table(), chosen.sin_table(), chosen.rotary_dim(),
                              spec_.attention.neox_rotary);
    }
}

void Decoder::attention_block(const DecoderLayerWeights& w, int64_t layer_index, const ForwardBatch& batch,
                              KvCacheTensors& kv, const TensorView& x, const TensorView& out) {
    const ModelConfig& c = config_;
    const int64_t t = batch.num_tokens();
    Tensor q = Tensor::empty({t, c.num_attention_heads * c.head_dim}, DType::kF32);
    Tensor k = Tensor::empty({t, c.num_key_value_heads * c.head_dim}, DType::kF32);
    Tensor v = Tensor::empty({t, c.num_key_value_heads * c.head_dim}, DType::kF32);
    ops::matmul(x, w.q.weight, w.q.bias_or_null(), q);
    ops::matmul(x, w.k.weight, w.k.bias_or_null(), k);
    ops::matmul(x, w.v.weight, w.v.bias_or_null(), v);
    TensorView q3(q.as<float>(), DType::kF32, {t, c.num_attention_heads, c.head_dim});
    TensorView k3(k.as<float>(), DType::kF32, {t, c.num_key_value_heads, c.head_dim});
    TensorView v3(v.as<float>(), DType::kF32, {t, c.num_key_value_heads, c.head_dim});
    if (spec_.attention.qk_norm) {
        qk_norm(w.q_norm, w.q_norm_bias, q3);
        qk_norm(w.k_norm, w.k_norm_bias, k3);
    }
    if (spec_.attention.positions == PositionEncoding::kRotary) {
        apply_rotary(w, batch, q3);
        apply_rotary(w, batch, k3);
    }
    ops::write_kv_cache(k3, v3, batch.slot_mapping, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)]);
    Tensor attn = Tensor::empty({t, c.num_attention_heads, c.head_dim}, DType::kF32);
    ops::AttentionParams params;
    params.scale = attention_scale(layer_index);
    if (!alibi_slopes_.empty()) params.alibi_slopes = alibi_slopes_.data();
    params.alibi_bf16_key_positions = spec_.attention.alibi_scaled;
    params.sliding_window = w.sliding_window;
    params.logit_softcap = spec_.attention.logit_softcap;
    ops::paged_attention(q3, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)], batch.attention, params, attn);
    TensorView attn2(attn.as<float>(), DType::kF32, {t, c.num_attention_heads * c.head_dim});
    ops::matmul(attn2, w.o.weight, w.o.bias_or_null(), out);
}

void Decoder::mlp_block(const DecoderLayerWeights& w, const TensorView& x, const TensorView& out) {
    if (w.moe) return w.moe->forward(x, out);
    const int64_t t = x.shape[0];
    Tensor up = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    if (!spec_.mlp.gated) {
        ops::matmul(x, w.up.weight, w.up.bias_or_null(), up);
        ops::activation_inplace(up, spec_.mlp.activation);
        ops::matmul(up, w.down.weight, w.down.bias_or_null(), out);
        return;
    }
    Tensor gate = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    ops::matmul(x, w.gate.weight, w.gate.bias_or_null(), gate);
    ops::matmul(x, w.up.weight, w.up.bias_or_null(), up);
    ops::gated_activation(gate, up, spec_.mlp.activation, gate);
    ops::matmul(gate, w.down.weight, w.down.bias_or_null(), out);
}

Tensor Decoder::forward(const ForwardBatch& batch, KvCacheTensors& kv) {
    const ModelConfig& c = config_;
    const int64_t t = batch.num_tokens();
    TACO_CHECK_GT(t, 0);
    TACO_CHECK_EQ(int64_t(batch.attention.positions.size()), t);
    TACO_CHECK_EQ(int64_t(batch.slot_mapping.size()), t);
    TACO_CHECK_EQ(int64_t(kv.k.size()), c.num_hidden_layers);
    int64_t max_position = 0;
    for (int32_t p : batch.attention.positions) max_position = std::max<int64_t>(max_position, p);
    rotary_->ensure(max_position + 1);
    if (rotary_local_) rotary_local_->ensure(max_position + 1);
    if (rotary_long_) rotary_long_->ensure(max_position + 1);

    Tensor hidden = Tensor::empty({t, c.hidden_size}, DType::kF32);  // the residual stream
    Tensor normed = Tensor::empty({t, c.hidden_size}, DType::kF32);
    Tensor block_out = Tensor::empty({t, c.hidden_size}, DType::kF32);
    embed_tokens(batch, hidden);
    // transformers multiplies by torch.tensor(hidden_size ** 0.5) in the activations' dtype: fp32 here.
    if (spec_.embedding.scale) ops::scale_inplace(hidden, float(std::sqrt(double(c.hidden_size))));
    Tensor sandwich =
        spec_.residual == ResidualLayout::kSandwich ? Tensor::empty({t, c.hidden_size}, DType::kF32) : Tensor();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const DecoderLayerWeights& w = layers_[size_t(l)];
        // Pre-norm layouts: block_out = attn(input_norm(x)), normed = input_norm(x).
        auto pre_norm_attention = [&] {
            norm(hidden, w.input_norm, w.input_norm_bias, normed);
            attention_block(w, l, batch, kv, normed, block_out);
        };
        switch (spec_.residual) {
            case ResidualLayout::kSequential:
                pre_norm_attention();
                ops::add_inplace(hidden, block_out);
                norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
                mlp_block(w, normed, block_out);
                ops::add_inplace(hidden, block_out);
                break;
            case ResidualLayout::kSandwich:
                pre_norm_attention();
                norm(block_out, w.post_attention_norm, w.post_attention_norm_bias, sandwich);
                ops::add_inplace(hidden, sandwich);
                norm(hidden, w.pre_feedforward_norm, Tensor(), normed);
                mlp_block(w, normed, block_out);
                norm(block_out, w.post_feedforward_norm, Tensor(), sandwich);
                ops::add_inplace(hidden, sandwich);
                break;
            case ResidualLayout::kParallelSharedNorm:
                pre_norm_attention();
                ops::add_inplace(hidden, block_out);
                mlp_block(w, normed, block_out);
                ops::add_inplace(hidden, block_out);
                break;
            case ResidualLayout::kParallelOwnNorms:
                pre_norm_attention();
                // The MLP's own norm reads x before the attention output joins it.
                norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
                ops::add_inplace(hidden, block_out);
                mlp_block(w, normed, block_out);
                ops::add_inplace(hidden, block_out);
                break;
            case ResidualLayout::kPostNorm: post_norm_layer(w, l, batch, kv, hidden); break;
        }
    }
    // Only the rows that need logits go through the final norm and the head (norms are per row).
    const int64_t num_logits = int64_t(batch.logits_indices.size());
    Tensor selected = Tensor::empty({num_logits, c.hidden_size}, DType::kF32);
    for (int64_t i = 0; i < num_logits; ++i) {
        int32_t row = batch.logits_indices[size_t(i)];
        TACO_CHECK(row >= 0 && row < t);
        std::copy_n(hidden.as<float>() + row * c.hidden_size, c.hidden_size, selected.as<float>() + i * c.hidden_size);
    }
    Tensor selected_normed = Tensor::empty({num_logits, c.hidden_size}, DType::kF32);
    if (final_norm_.defined()) {
        norm(selected, final_norm_, final_norm_bias_, selected_normed);
    } else {
        selected_normed = std::move(selected);
    }
    if (project_out_.weight.data != nullptr) {
        Tensor projected = Tensor::empty({num_logits, project_out_.weight.shape[0]}, DType::kF32);
        ops::matmul(selected_normed, project_out_.weight, nullptr, projected);
        selected_normed = std::move(projected);
    }
    Tensor logits = Tensor::empty({num_logits, c.vocab_size}, DType::kF32);
    ops::matmul(selected_normed, lm_head_, lm_head_bias_.defined() ? &lm_head_bias_.view() : nullptr, logits);
    if (spec_.head.final_logit_softcap > 0) ops::softcap_inplace(logits, spec_.head.final_logit_softcap);
    return logits;
}

}  // namespace taco
