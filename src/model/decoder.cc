#include "model/decoder.h"

#include <cmath>
#include <set>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/alibi.h"
#include "model/arch_registry.h"
#include "model/weight_layout.h"

namespace taco {
namespace {

std::string layer_name(const std::string& pattern, int64_t layer) {
    std::string out = pattern;
    auto at = out.find("{}");
    if (at != std::string::npos) out.replace(at, 2, std::to_string(layer));
    return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "x.weight" -> "x.bias" (names of norms and heads carry their ".weight").
std::string bias_name(const std::string& weight_name) {
    const std::string suffix = ".weight";
    if (!ends_with(weight_name, suffix)) return weight_name + ".bias";
    return weight_name.substr(0, weight_name.size() - suffix.size()) + ".bias";
}

// Hands out checkpoint tensors by name, checking shape and dtype, and remembers which were used so that a
// tensor nobody asked for (a wrong name map) is an error rather than silently ignored weights.
class WeightBinder {
public:
    WeightBinder(const Checkpoint& checkpoint, const ArchSpec& spec) : checkpoint_(checkpoint), spec_(spec) {}

    Result<TensorView> matrix(const std::string& name, int64_t rows, int64_t cols) {
        TACO_ASSIGN_OR_RETURN(TensorView t, fetch(name));
        if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols)
            return error("{}: tensor '{}' has shape {}, expected [{}, {}]", checkpoint_.dir(), name, t.shape_string(),
                         rows, cols);
        if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16)
            return error("{}: tensor '{}' has dtype {}; weights must be F32, F16 or BF16", checkpoint_.dir(), name,
                         dtype_name(t.dtype));
        return t;
    }

    // A [size] vector copied to f32 (norm weights, biases).
    Result<Tensor> vector(const std::string& name, int64_t size) {
        TACO_ASSIGN_OR_RETURN(TensorView t, fetch(name));
        if (t.ndim != 1 || t.shape[0] != size)
            return error("{}: tensor '{}' has shape {}, expected [{}]", checkpoint_.dir(), name, t.shape_string(),
                         size);
        if (!dtype_is_float(t.dtype))
            return error("{}: tensor '{}' has dtype {}, expected a float type", checkpoint_.dir(), name,
                         dtype_name(t.dtype));
        Tensor out = Tensor::empty({size}, DType::kF32);
        for (int64_t i = 0; i < size; ++i) out.as<float>()[i] = load_as_f32(t.data, t.dtype, size_t(i));
        return out;
    }

    Result<LinearWeights> linear(const std::string& prefix, int64_t out_features, int64_t in_features, bool bias) {
        LinearWeights w;
        if (spec_.transposed_linears) {
            TACO_ASSIGN_OR_RETURN(TensorView stored, matrix(prefix + ".weight", in_features, out_features));
            w.storage = transposed_copy(stored);
            w.weight = w.storage.view();
        } else {
            TACO_ASSIGN_OR_RETURN(w.weight, matrix(prefix + ".weight", out_features, in_features));
        }
        if (bias) {
            TACO_ASSIGN_OR_RETURN(w.bias, vector(prefix + ".bias", out_features));
        }
        return w;
    }

    // The ".bias" of a LayerNorm named `weight_name`, or an undefined tensor when the architecture has none.
    Result<Tensor> norm_bias(const std::string& weight_name, int64_t size) {
        if (!spec_.norm_bias) return Tensor();
        return vector(bias_name(weight_name), size);
    }

    // A fused qkv projection split into q, k and v by spec.qkv_layout.
    Status fused_qkv(const std::string& prefix, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t in_features,
                     bool bias, DecoderLayerWeights& w) {
        TACO_ASSIGN_OR_RETURN(QkvRows rows, qkv_rows(spec_.qkv_layout, heads, kv_heads, head_dim));
        const int64_t out_features = (heads + 2 * kv_heads) * head_dim;
        TACO_ASSIGN_OR_RETURN(LinearWeights fused, linear(prefix, out_features, in_features, bias));
        for (auto [part, part_rows] : {std::pair{&w.q, &rows.q}, std::pair{&w.k, &rows.k}, std::pair{&w.v, &rows.v}}) {
            part->storage = gather_rows(fused.weight, *part_rows);
            part->weight = part->storage.view();
            if (bias) part->bias = gather_rows(fused.bias, *part_rows);
        }
        return Status::ok();
    }

    // Every checkpoint tensor must have been used (or be one the architecture ignores).
    Status check_all_used() const {
        std::vector<std::string> unused;
        for (const std::string& name : checkpoint_.tensor_names()) {
            if (used_.count(name)) continue;
            bool ignored = false;
            for (const auto& suffix : spec_.ignored_tensor_suffixes) ignored |= ends_with(name, suffix);
            if (!ignored) unused.push_back(name);
        }
        if (unused.empty()) return Status::ok();
        std::string list;
        for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", '" : "'") + unused[i] + "'";
        if (unused.size() > 5) list += fmt::format(" and {} more", unused.size() - 5);
        return error("{}: {} tensor(s) in the checkpoint are not used by {}: {}", checkpoint_.dir(), unused.size(),
                     spec_.name, list);
    }

private:
    Result<TensorView> fetch(const std::string& name) {
        const std::string prefix = spec_.base_model_prefix + ".";
        if (!spec_.base_model_prefix.empty() && !checkpoint_.contains(name) && name.rfind(prefix, 0) == 0 &&
            checkpoint_.contains(name.substr(prefix.size())))
            return fetch(name.substr(prefix.size()));
        TACO_ASSIGN_OR_RETURN(TensorView t, checkpoint_.tensor(name));
        used_.insert(name);
        return t;
    }

    const Checkpoint& checkpoint_;
    const ArchSpec& spec_;
    std::set<std::string> used_;
};

}  // namespace

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
    TACO_RETURN_IF_ERROR(decoder->bind_weights());
    decoder->rotary_ = std::make_unique<RotaryTables>(decoder->config_);
    return decoder;
}

Status Decoder::bind_weights() {
    const ModelConfig& c = config_;
    const WeightNames& n = spec_.names;
    WeightBinder binder(*checkpoint_, spec_);
    const int64_t q_size = c.num_attention_heads * c.head_dim;
    const int64_t kv_size = c.num_key_value_heads * c.head_dim;
    const int64_t embed_dim = spec_.embed_dim > 0 ? spec_.embed_dim : c.hidden_size;
    TACO_ASSIGN_OR_RETURN(embed_, binder.matrix(n.embed, c.vocab_size, embed_dim));
    if (!n.final_norm.empty()) {
        TACO_ASSIGN_OR_RETURN(final_norm_, binder.vector(n.final_norm, c.hidden_size));
        TACO_ASSIGN_OR_RETURN(final_norm_bias_, binder.norm_bias(n.final_norm, c.hidden_size));
    }
    // Tied heads: transformers drops lm_head.weight when saving, but some checkpoints keep a copy.
    if (spec_.tied_embeddings && !checkpoint_->contains(n.lm_head)) {
        lm_head_ = embed_;
    } else {
        TACO_ASSIGN_OR_RETURN(lm_head_, binder.matrix(n.lm_head, c.vocab_size, embed_dim));
    }
    if (spec_.lm_head_bias) {
        TACO_ASSIGN_OR_RETURN(lm_head_bias_, binder.vector(bias_name(n.lm_head), c.vocab_size));
    }
    if (!n.pos_embed.empty()) {
        TACO_ASSIGN_OR_RETURN(
            pos_embed_, binder.matrix(n.pos_embed, c.max_position_embeddings + spec_.position_offset, c.hidden_size));
    }
    if (!n.embed_norm.empty()) {
        TACO_ASSIGN_OR_RETURN(embed_norm_, binder.vector(n.embed_norm, c.hidden_size));
        TACO_ASSIGN_OR_RETURN(embed_norm_bias_, binder.norm_bias(n.embed_norm, c.hidden_size));
    }
    if (!n.project_in.empty()) {
        TACO_ASSIGN_OR_RETURN(project_in_, binder.linear(n.project_in, c.hidden_size, embed_dim, false));
        TACO_ASSIGN_OR_RETURN(project_out_, binder.linear(n.project_out, embed_dim, c.hidden_size, false));
    }
    if (spec_.positions == PositionEncoding::kAlibi) {
        alibi_slopes_ = alibi_slopes(c.num_attention_heads);
        if (spec_.alibi_scaled)
            for (float& slope : alibi_slopes_) slope *= attention_scale(0);
    }
    layers_.resize(size_t(c.num_hidden_layers));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        DecoderLayerWeights& w = layers_[size_t(l)];
        auto name = [l](const std::string& pattern) { return layer_name(pattern, l); };
        TACO_ASSIGN_OR_RETURN(w.input_norm, binder.vector(name(n.input_norm), c.hidden_size));
        TACO_ASSIGN_OR_RETURN(w.input_norm_bias, binder.norm_bias(name(n.input_norm), c.hidden_size));
        if (!n.post_attention_norm.empty()) {
            TACO_ASSIGN_OR_RETURN(w.post_attention_norm, binder.vector(name(n.post_attention_norm), c.hidden_size));
            TACO_ASSIGN_OR_RETURN(w.post_attention_norm_bias,
                                  binder.norm_bias(name(n.post_attention_norm), c.hidden_size));
        }
        if (spec_.qkv_layout != QkvLayout::kSeparate) {
            TACO_RETURN_IF_ERROR(binder.fused_qkv(name(n.qkv_proj), c.num_attention_heads, c.num_key_value_heads,
                                                  c.head_dim, c.hidden_size, spec_.qkv_bias, w));
        } else {
            TACO_ASSIGN_OR_RETURN(w.q, binder.linear(name(n.q_proj), q_size, c.hidden_size, spec_.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.k, binder.linear(name(n.k_proj), kv_size, c.hidden_size, spec_.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.v, binder.linear(name(n.v_proj), kv_size, c.hidden_size, spec_.qkv_bias));
        }
        TACO_ASSIGN_OR_RETURN(w.o, binder.linear(name(n.o_proj), c.hidden_size, q_size, spec_.o_bias));
        if (!n.q_norm.empty()) {
            TACO_ASSIGN_OR_RETURN(w.q_norm, binder.vector(name(n.q_norm), c.head_dim));
            TACO_ASSIGN_OR_RETURN(w.q_norm_bias, binder.norm_bias(name(n.q_norm), c.head_dim));
            TACO_ASSIGN_OR_RETURN(w.k_norm, binder.vector(name(n.k_norm), c.head_dim));
            TACO_ASSIGN_OR_RETURN(w.k_norm_bias, binder.norm_bias(name(n.k_norm), c.head_dim));
        }
        if (spec_.gated_mlp) {
            TACO_ASSIGN_OR_RETURN(w.gate,
                                  binder.linear(name(n.gate_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
        }
        TACO_ASSIGN_OR_RETURN(w.up, binder.linear(name(n.up_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
        TACO_ASSIGN_OR_RETURN(w.down,
                              binder.linear(name(n.down_proj), c.hidden_size, c.intermediate_size, spec_.mlp_bias));
        bool sliding = spec_.uses_sliding_window && c.layer_types[size_t(l)] == LayerAttention::kSliding;
        w.sliding_window = sliding ? int(c.sliding_window) : 0;
    }
    return binder.check_all_used().with_context(spec_.name);
}

void Decoder::norm(const TensorView& x, const Tensor& weight, const Tensor& bias, const TensorView& out) const {
    switch (spec_.norm) {
        case NormKind::kRmsNorm:
            ops::rms_norm(x, weight, float(config_.rms_norm_eps), spec_.norm_weight_offset, out);
            return;
        case NormKind::kLayerNorm:
            ops::layer_norm(x, weight, bias.defined() ? &bias.view() : nullptr, float(config_.rms_norm_eps), out);
            return;
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
    const auto& positions = batch.attention.positions;
    if (w.q_norm.defined()) qk_norm(w, q3, k3);
    if (spec_.positions == PositionEncoding::kRotary) {
        ops::rotary_embedding(q3, positions, rotary_->cos_table(), rotary_->sin_table(), rotary_->rotary_dim(),
                              spec_.neox_rotary);
        ops::rotary_embedding(k3, positions, rotary_->cos_table(), rotary_->sin_table(), rotary_->rotary_dim(),
                              spec_.neox_rotary);
    }
    ops::write_kv_cache(k3, v3, batch.slot_mapping, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)]);
    Tensor attn = Tensor::empty({t, c.num_attention_heads, c.head_dim}, DType::kF32);
    ops::AttentionParams params;
    params.scale = attention_scale(layer_index);
    params.sliding_window = w.sliding_window;
    if (!alibi_slopes_.empty()) params.alibi_slopes = alibi_slopes_.data();
    ops::paged_attention(q3, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)], batch.attention, params, attn);
    TensorView attn2(attn.as<float>(), DType::kF32, {t, c.num_attention_heads * c.head_dim});
    ops::matmul(attn2, w.o.weight, w.o.bias_or_null(), out);
}

void Decoder::mlp_block(const DecoderLayerWeights& w, const TensorView& x, const TensorView& out) {
    const int64_t t = x.shape[0];
    Tensor gate = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    Tensor up = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    ops::matmul(x, w.up.weight, w.up.bias_or_null(), up);
    if (!spec_.gated_mlp) {
        ops::activation_inplace(up, spec_.activation);
        ops::matmul(up, w.down.weight, w.down.bias_or_null(), out);
        return;
    }
    ops::matmul(x, w.gate.weight, w.gate.bias_or_null(), gate);
    ops::gated_activation(gate, up, spec_.activation, gate);
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

    Tensor hidden = Tensor::empty({t, c.hidden_size}, DType::kF32);  // the residual stream
    Tensor normed = Tensor::empty({t, c.hidden_size}, DType::kF32);
    Tensor block_out = Tensor::empty({t, c.hidden_size}, DType::kF32);
    embed_tokens(batch, hidden);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const DecoderLayerWeights& w = layers_[size_t(l)];
        if (spec_.residual != ResidualKind::kSequential) {
            gpt_layer(w, l, batch, kv, hidden);
            continue;
        }
        norm(hidden, w.input_norm, w.input_norm_bias, normed);
        attention_block(w, l, batch, kv, normed, block_out);
        ops::add_inplace(hidden, block_out);
        norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
        mlp_block(w, normed, block_out);
        ops::add_inplace(hidden, block_out);
    }
    // Only the rows that need logits go through the final norm and the head (norms are per row).
    const int64_t num_logits = int64_t(batch.logits_indices.size());
    Tensor selected = Tensor::empty({num_logits, c.hidden_size}, DType::kF32);
    for (int64_t i = 0; i < num_logits; ++i) {
        int32_t row = batch.logits_indices[size_t(i)];
        TACO_CHECK(row >= 0 && row < t);
        std::copy_n(hidden.as<float>() + row * c.hidden_size, c.hidden_size, selected.as<float>() + i * c.hidden_size);
    }
    Tensor logits = Tensor::empty({num_logits, c.vocab_size}, DType::kF32);
    logits_head(selected, logits);
    return logits;
}

}  // namespace taco
