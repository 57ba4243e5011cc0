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

void Decoder::embed_tokens(const Pass& pass, const TensorView& hidden) const {
    const int64_t t = pass.batch.num_tokens;
    const size_t mark = pass.ws.mark();
    if (project_in_.weight.data == nullptr) {
        ops::embedding(pass.ctx, pass.batch.token_ids, embed_, hidden);
    } else {
        TensorView embedded = pass.alloc({t, embed_.shape[1]});
        ops::embedding(pass.ctx, pass.batch.token_ids, embed_, embedded);
        ops::matmul(pass.ctx, embedded, project_in_.weight, nullptr, hidden);
    }
    if (pos_embed_.data != nullptr) {
        // Row p of the table view is the learned position p (OPT stores two rows before position 0). Runners cap
        // max_model_len at max_positions(), so every position has a row (the op checks).
        const TensorView table = pos_embed_.rows(spec_.embedding.position_offset, pos_embed_.shape[0]);
        TensorView positions = pass.alloc({t, config_.hidden_size});
        ops::embedding(pass.ctx, pass.batch.positions(), table, positions);
        ops::add_inplace(pass.ctx, hidden, positions);
    }
    if (embed_norm_.defined()) {
        TensorView normed = pass.alloc({t, config_.hidden_size});
        norm(pass, hidden, embed_norm_, embed_norm_bias_, normed);
        ops::copy(pass.ctx, normed, hidden);
    }
    pass.ws.release_to(mark);
}

// OPT with do_layer_norm_before = false: x = norm1(x + attn(x)); x = norm2(x + mlp(x)).
void Decoder::post_norm_layer(const Pass& pass, const DecoderLayerWeights& w, int64_t layer_index,
                              const TensorView& hidden) const {
    const int64_t t = pass.batch.num_tokens, size = config_.hidden_size;
    const size_t mark = pass.ws.mark();
    TensorView block_out = pass.alloc({t, size});
    TensorView normed = pass.alloc({t, size});
    attention_block(pass, w, layer_index, hidden, block_out);
    ops::add_inplace(pass.ctx, hidden, block_out);
    norm(pass, hidden, w.input_norm, w.input_norm_bias, normed);
    ops::copy(pass.ctx, normed, hidden);
    mlp_block(pass, w, hidden, block_out);
    ops::add_inplace(pass.ctx, hidden, block_out);
    norm(pass, hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
    ops::copy(pass.ctx, normed, hidden);
    pass.ws.release_to(mark);
}

float Decoder::attention_scale(int64_t layer_index) const {
    double scale =
        spec_.attention.scale > 0 ? double(spec_.attention.scale) : 1.0 / std::sqrt(double(config_.head_dim));
    if (spec_.attention.scale_by_inverse_layer_idx) scale /= double(layer_index + 1);
    return float(scale);
}

}  // namespace taco
