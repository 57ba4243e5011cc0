// The generic decoder's forward pass: every op on views, every activation from the pass's workspace (carved in
// the same order each pass, so the same step shape gets the same addresses), no host read of activation data.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/decoder.h"
#include "model/weight_placer.h"

namespace taco {

void Decoder::prepare(const DecoderRunOptions& options) {
    TACO_CHECK_GT(options.max_model_len, 0);
    TACO_CHECK_GT(options.head_rows, 0);
    const int64_t positions = std::max(options.max_model_len, run_.max_model_len);
    const bool rotary = spec_.attention.positions == PositionEncoding::kRotary;
    if (rotary && (rotary_ == nullptr || rotary_->num_positions() < positions)) {
        rotary_ = std::make_unique<RotaryTables>(config_, positions);
        if (config_.rope_local) {
            ModelConfig local = config_;
            local.rope = *config_.rope_local;
            rotary_local_ = std::make_unique<RotaryTables>(local, positions);
        }
        if (device_ != Device::kCpu) {  // the tables go where the weights are
            auto placer = WeightPlacer::create(device_, weight_dtype_, false, 0);
            TACO_CHECK_MSG(placer.is_ok(), "placing the rotary tables: {}", placer.status().message());
            rotary_->place(**placer);
            if (rotary_local_ != nullptr) rotary_local_->place(**placer);
            (*placer)->finish();
        }
    }
    run_ = options;
    run_.max_model_len = positions;
}

RotaryLayout Decoder::rotary_layout() const {
    TACO_CHECK_MSG(run_.max_model_len > 0, "Decoder::prepare was not called");
    return rotary_ != nullptr ? rotary_->layout() : RotaryLayout{};
}

// Norm weights hold the stored offset already (WeightBinder::norm).
void Decoder::norm(const Pass& pass, const TensorView& x, const Tensor& weight, const Tensor& bias,
                   const TensorView& out) const {
    const float eps = float(spec_.norm.eps.value_or(config_.rms_norm_eps));
    switch (spec_.norm.kind) {
        case NormKind::kRmsNorm: ops::rms_norm(pass.ctx, x, weight, eps, 0.0f, out); return;
        case NormKind::kLayerNorm:
            ops::layer_norm(pass.ctx, x, weight, bias.defined() ? &bias.view() : nullptr, eps, out);
            return;
    }
}

void Decoder::add_and_norm(const Pass& pass, const TensorView& hidden, const TensorView& delta, const Tensor& weight,
                           const Tensor& bias, const TensorView& out) const {
    if (spec_.norm.kind == NormKind::kRmsNorm) {
        ops::add_rms_norm(pass.ctx, hidden, delta, weight, float(spec_.norm.eps.value_or(config_.rms_norm_eps)), 0.0f,
                          out);
        return;
    }
    ops::add_inplace(pass.ctx, hidden, delta);
    norm(pass, hidden, weight, bias, out);
}

void Decoder::qk_norm(const Pass& pass, const Tensor& weight, const Tensor& bias, const TensorView& x) const {
    const float eps = float(spec_.norm.eps.value_or(config_.rms_norm_eps));
    if (spec_.attention.qk_norm_per_head) {
        TACO_CHECK(spec_.norm.kind == NormKind::kLayerNorm);  // StableLM's LayerNorm per head, no bias
        ops::per_head_layer_norm(pass.ctx, x, weight, nullptr, eps);
        return;
    }
    const TensorView rows = x.reshape({x.shape[0] * x.shape[1], x.shape[2]});
    switch (spec_.norm.kind) {
        case NormKind::kRmsNorm: ops::rms_norm(pass.ctx, rows, weight, eps, 0.0f, rows); return;
        case NormKind::kLayerNorm:
            ops::layer_norm(pass.ctx, rows, weight, bias.defined() ? &bias.view() : nullptr, eps, rows);
            return;
    }
}

void Decoder::attention_block(const Pass& pass, const DecoderLayerWeights& w, int64_t layer_index, const TensorView& x,
                              const TensorView& out) const {
    const ModelConfig& c = config_;
    const int64_t t = pass.batch.num_tokens;
    const size_t mark = pass.ws.mark();
    TensorView q = pass.alloc({t, c.num_attention_heads, c.head_dim});
    TensorView k = pass.alloc({t, c.num_key_value_heads, c.head_dim});
    TensorView v = pass.alloc({t, c.num_key_value_heads, c.head_dim});
    // One launch on the GPU at decode shapes; the bits of three matmuls.
    const ops::Projection qkv[] = {{&w.q.weight, w.q.bias_or_null(), q.reshape({t, -1})},
                                   {&w.k.weight, w.k.bias_or_null(), k.reshape({t, -1})},
                                   {&w.v.weight, w.v.bias_or_null(), v.reshape({t, -1})}};
    ops::matmuls(pass.ctx, x, qkv);
    if (spec_.attention.qk_norm) {
        qk_norm(pass, w.q_norm, w.q_norm_bias, q);
        qk_norm(pass, w.k_norm, w.k_norm_bias, k);
    }
    const TensorView& k_cache = pass.kv.k[size_t(layer_index)];
    const TensorView& v_cache = pass.kv.v[size_t(layer_index)];
    if (spec_.attention.positions == PositionEncoding::kRotary) {
        // Rotary of q and k and the KV write: one launch on the GPU (ops::rotary_write_kv). Positions pick the
        // table rows; the table is the layer's (Gemma3 local layers have their own). With LongRoPE each token's row
        // is offset into the long half when its sequence's whole length passes the threshold
        // (ForwardBatch::rotary_offsets), so one op covers every sequence of the batch.
        const RotaryTables& table = w.local_rotary ? *rotary_local_ : *rotary_;
        const bool long_rope = !w.local_rotary && table.layout().long_rope_threshold > 0;
        ops::rotary_write_kv(pass.ctx, q, k, v, pass.batch.positions(),
                             long_rope ? pass.batch.rotary_offsets : TensorView(), table.cos_table(), table.sin_table(),
                             table.rotary_dim(), spec_.attention.neox_rotary, pass.batch.slot_mapping, k_cache,
                             v_cache);
    } else {
        ops::write_kv_cache(pass.ctx, k, v, pass.batch.slot_mapping, k_cache, v_cache);
    }
    TensorView attn = pass.alloc({t, c.num_attention_heads, c.head_dim});
    ops::AttentionParams params;
    params.scale = attention_scale(layer_index);
    if (alibi_slopes_.defined()) params.alibi_slopes = alibi_slopes_.view();
    params.alibi_bf16_key_positions = spec_.attention.alibi_scaled;
    params.sliding_window = w.sliding_window;
    params.logit_softcap = spec_.attention.logit_softcap;
    ops::paged_attention(pass.ctx, q, k_cache, v_cache, pass.batch.attention, params, attn);
    ops::matmul(pass.ctx, attn.reshape({t, -1}), w.o.weight, w.o.bias_or_null(), out);
    pass.ws.release_to(mark);
}

void Decoder::mlp_block(const Pass& pass, const DecoderLayerWeights& w, const TensorView& x,
                        const TensorView& out) const {
    if (w.moe) return w.moe->forward(pass.ctx, pass.ws, x, pass.batch.slot_mapping, out);
    const int64_t t = x.shape[0];
    const size_t mark = pass.ws.mark();
    TensorView up = pass.alloc({t, config_.intermediate_size});
    if (!spec_.mlp.gated) {
        ops::matmul(pass.ctx, x, w.up.weight, w.up.bias_or_null(), up);
        ops::activation_inplace(pass.ctx, up, spec_.mlp.activation);
        ops::matmul(pass.ctx, up, w.down.weight, w.down.bias_or_null(), out);
    } else {
        TensorView gate = pass.alloc({t, config_.intermediate_size});
        ops::gated_projection(pass.ctx, x, {&w.gate.weight, w.gate.bias_or_null(), gate},
                              {&w.up.weight, w.up.bias_or_null(), up}, spec_.mlp.activation, gate);
        ops::matmul(pass.ctx, gate, w.down.weight, w.down.bias_or_null(), out);
    }
    pass.ws.release_to(mark);
}

// One layer: attention and MLP joined to the residual stream `hidden` (updated in place) as spec_.residual says.
void Decoder::layer(const Pass& pass, const DecoderLayerWeights& w, int64_t l, const TensorView& hidden,
                    const TensorView& pending) const {
    if (spec_.residual == ResidualLayout::kPostNorm) return post_norm_layer(pass, w, l, hidden);
    const int64_t t = pass.batch.num_tokens, size = config_.hidden_size;
    const size_t mark = pass.ws.mark();
    TensorView normed = pass.alloc({t, size});
    TensorView block_out = pass.alloc({t, size});
    if (pending.defined() && l > 0) {
        add_and_norm(pass, hidden, pending, w.input_norm, w.input_norm_bias, normed);
    } else {
        norm(pass, hidden, w.input_norm, w.input_norm_bias, normed);
    }
    attention_block(pass, w, l, normed, block_out);
    switch (spec_.residual) {
        case ResidualLayout::kSequential:
            add_and_norm(pass, hidden, block_out, w.post_attention_norm, w.post_attention_norm_bias, normed);
            mlp_block(pass, w, normed, pending);  // joins the stream in the next layer's first norm (or forward())
            break;
        case ResidualLayout::kSandwich: {
            TensorView sandwich = pass.alloc({t, size});
            norm(pass, block_out, w.post_attention_norm, w.post_attention_norm_bias, sandwich);
            ops::add_inplace(pass.ctx, hidden, sandwich);
            norm(pass, hidden, w.pre_feedforward_norm, Tensor(), normed);
            mlp_block(pass, w, normed, block_out);
            norm(pass, block_out, w.post_feedforward_norm, Tensor(), sandwich);
            ops::add_inplace(pass.ctx, hidden, sandwich);
            break;
        }
        case ResidualLayout::kParallelSharedNorm:
            ops::add_inplace(pass.ctx, hidden, block_out);
            mlp_block(pass, w, normed, block_out);
            ops::add_inplace(pass.ctx, hidden, block_out);
            break;
        case ResidualLayout::kParallelOwnNorms:
            // The MLP's own norm reads x before the attention output joins it.
            norm(pass, hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
            ops::add_inplace(pass.ctx, hidden, block_out);
            mlp_block(pass, w, normed, block_out);
            ops::add_inplace(pass.ctx, hidden, block_out);
            break;
        case ResidualLayout::kPostNorm: break;  // handled above
    }
    pass.ws.release_to(mark);
}

// Only the rows that need logits go through the final norm and the head (norms are per row), in chunks of
// run_.head_rows rows so the workspace stays bounded however many prompt-logit rows a step asks for.
void Decoder::head(const Pass& pass, const TensorView& hidden, const TensorView& logits) const {
    const int64_t num_logits = pass.batch.num_logits(), size = config_.hidden_size;
    TACO_CHECK_MSG(logits.ndim == 2 && logits.shape[0] == num_logits && logits.shape[1] == config_.vocab_size &&
                       logits.dtype == DType::kF32,
                   "logits buffer {} for {} rows of {}", logits.shape_string(), num_logits, config_.vocab_size);
    for (int64_t begin = 0; begin < num_logits; begin += run_.head_rows) {
        const int64_t end = std::min(num_logits, begin + run_.head_rows), rows = end - begin;
        const size_t mark = pass.ws.mark();
        TensorView x = pass.alloc({rows, size});
        ops::gather_rows(pass.ctx, hidden, pass.batch.logits_indices.rows(begin, end), x);
        if (final_norm_.defined()) {
            TensorView normed = pass.alloc({rows, size});
            norm(pass, x, final_norm_, final_norm_bias_, normed);
            x = normed;
        }
        if (project_out_.weight.data != nullptr) {
            TensorView projected = pass.alloc({rows, project_out_.weight.shape[0]});
            ops::matmul(pass.ctx, x, project_out_.weight, nullptr, projected);
            x = projected;
        }
        const TensorView out = logits.rows(begin, end);
        ops::matmul(pass.ctx, x, lm_head_, lm_head_bias_.defined() ? &lm_head_bias_.view() : nullptr, out);
        if (spec_.head.final_logit_softcap > 0) ops::softcap_inplace(pass.ctx, out, spec_.head.final_logit_softcap);
        pass.ws.release_to(mark);
    }
}

void Decoder::forward(const ExecContext& ctx, const ForwardBatch& batch, KvCacheTensors& kv, Workspace& ws,
                      const TensorView& logits) const {
    const ModelConfig& c = config_;
    TACO_CHECK_MSG(run_.max_model_len > 0, "Decoder::prepare was not called");
    TACO_CHECK_GT(batch.num_tokens, 0);
    TACO_CHECK_EQ(int64_t(kv.k.size()), c.num_hidden_layers);
    const Pass pass{ctx, batch, kv, ws, run_.activation_dtype};
    TensorView hidden = pass.alloc({batch.num_tokens, c.hidden_size});  // the residual stream
    embed_tokens(pass, hidden);
    // transformers multiplies by torch.tensor(hidden_size ** 0.5) in the activations' dtype: the factor is rounded to
    // it (bf16 / f16 on CUDA) before the product.
    if (spec_.embedding.scale) {
        float scale = float(std::sqrt(double(c.hidden_size)));
        if (pass.act == DType::kBF16) scale = bf16_to_f32(f32_to_bf16(scale));
        if (pass.act == DType::kF16) scale = f16_to_f32(f32_to_f16(scale));
        ops::scale_inplace(ctx, hidden, scale);
    }
    // kSequential: each layer's MLP output waits here for the next layer's first norm (Decoder::layer).
    const TensorView pending =
        spec_.residual == ResidualLayout::kSequential ? pass.alloc({batch.num_tokens, c.hidden_size}) : TensorView();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) layer(pass, layers_[size_t(l)], l, hidden, pending);
    if (pending.defined() && c.num_hidden_layers > 0) ops::add_inplace(ctx, hidden, pending);
    head(pass, hidden, logits);
}

}  // namespace taco
