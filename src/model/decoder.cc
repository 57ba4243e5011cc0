#include "model/decoder.h"

#include <cmath>
#include <set>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/arch_registry.h"

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
        TACO_ASSIGN_OR_RETURN(w.weight, matrix(prefix + ".weight", out_features, in_features));
        if (bias) {
            TACO_ASSIGN_OR_RETURN(w.bias, vector(prefix + ".bias", out_features));
        }
        return w;
    }

    // MoE: what MoeBlock::bind reads through.
    MoeWeightSource moe_source() {
        MoeWeightSource source;
        source.contains = [this](const std::string& name) { return checkpoint_.contains(name); };
        source.matrix = [this](const std::string& name, int64_t rows, int64_t cols) {
            return matrix(name, rows, cols);
        };
        source.tensor = [this](const std::string& name) { return fetch(name); };
        return source;
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
    TACO_ASSIGN_OR_RETURN(embed_, binder.matrix(n.embed, c.vocab_size, c.hidden_size));
    TACO_ASSIGN_OR_RETURN(final_norm_, binder.vector(n.final_norm, c.hidden_size));
    // Tied heads: transformers drops lm_head.weight when saving, but some checkpoints keep a copy.
    if (spec_.tied_embeddings && !checkpoint_->contains(n.lm_head)) {
        lm_head_ = embed_;
    } else {
        TACO_ASSIGN_OR_RETURN(lm_head_, binder.matrix(n.lm_head, c.vocab_size, c.hidden_size));
    }
    layers_.resize(size_t(c.num_hidden_layers));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        DecoderLayerWeights& w = layers_[size_t(l)];
        auto name = [l](const std::string& pattern) { return layer_name(pattern, l); };
        TACO_ASSIGN_OR_RETURN(w.input_norm, binder.vector(name(n.input_norm), c.hidden_size));
        TACO_ASSIGN_OR_RETURN(w.post_attention_norm, binder.vector(name(n.post_attention_norm), c.hidden_size));
        TACO_ASSIGN_OR_RETURN(w.q, binder.linear(name(n.q_proj), q_size, c.hidden_size, spec_.qkv_bias));
        TACO_ASSIGN_OR_RETURN(w.k, binder.linear(name(n.k_proj), kv_size, c.hidden_size, spec_.qkv_bias));
        TACO_ASSIGN_OR_RETURN(w.v, binder.linear(name(n.v_proj), kv_size, c.hidden_size, spec_.qkv_bias));
        TACO_ASSIGN_OR_RETURN(w.o, binder.linear(name(n.o_proj), c.hidden_size, q_size, spec_.o_bias));
        if (spec_.moe.is_sparse(l)) {
            TACO_ASSIGN_OR_RETURN(MoeBlock moe,
                                  MoeBlock::bind(spec_.moe, l, c.hidden_size, spec_.activation, binder.moe_source()));
            w.moe = std::make_shared<const MoeBlock>(std::move(moe));
        } else {
            TACO_ASSIGN_OR_RETURN(w.gate,
                                  binder.linear(name(n.gate_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
            TACO_ASSIGN_OR_RETURN(w.up,
                                  binder.linear(name(n.up_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
            TACO_ASSIGN_OR_RETURN(w.down,
                                  binder.linear(name(n.down_proj), c.hidden_size, c.intermediate_size, spec_.mlp_bias));
        }
        bool sliding = spec_.uses_sliding_window && c.layer_types[size_t(l)] == LayerAttention::kSliding;
        w.sliding_window = sliding ? int(c.sliding_window) : 0;
    }
    return binder.check_all_used().with_context(spec_.name);
}

void Decoder::norm(const TensorView& x, const Tensor& weight, const TensorView& out) const {
    switch (spec_.norm) {
        case NormKind::kRmsNorm:
            ops::rms_norm(x, weight, float(config_.rms_norm_eps), spec_.norm_weight_offset, out);
            return;
        case NormKind::kLayerNorm: ops::layer_norm(x, weight, nullptr, float(config_.rms_norm_eps), out); return;
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
    ops::rotary_embedding(q3, positions, rotary_->cos_table(), rotary_->sin_table(), rotary_->rotary_dim(),
                          spec_.neox_rotary);
    ops::rotary_embedding(k3, positions, rotary_->cos_table(), rotary_->sin_table(), rotary_->rotary_dim(),
                          spec_.neox_rotary);
    ops::write_kv_cache(k3, v3, batch.slot_mapping, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)]);
    Tensor attn = Tensor::empty({t, c.num_attention_heads, c.head_dim}, DType::kF32);
    ops::AttentionParams params;
    params.scale = float(1.0 / std::sqrt(double(c.head_dim)));
    params.sliding_window = w.sliding_window;
    ops::paged_attention(q3, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)], batch.attention, params, attn);
    TensorView attn2(attn.as<float>(), DType::kF32, {t, c.num_attention_heads * c.head_dim});
    ops::matmul(attn2, w.o.weight, w.o.bias_or_null(), out);
}

void Decoder::mlp_block(const DecoderLayerWeights& w, const TensorView& x, const TensorView& out) {
    if (w.moe) return w.moe->forward(x, out);
    const int64_t t = x.shape[0];
    Tensor gate = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    Tensor up = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    ops::matmul(x, w.gate.weight, w.gate.bias_or_null(), gate);
    ops::matmul(x, w.up.weight, w.up.bias_or_null(), up);
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
    ops::embedding(batch.token_ids, embed_, hidden);
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const DecoderLayerWeights& w = layers_[size_t(l)];
        norm(hidden, w.input_norm, normed);
        attention_block(w, l, batch, kv, normed, block_out);
        ops::add_inplace(hidden, block_out);
        norm(hidden, w.post_attention_norm, normed);
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
    Tensor selected_normed = Tensor::empty({num_logits, c.hidden_size}, DType::kF32);
    norm(selected, final_norm_, selected_normed);
    Tensor logits = Tensor::empty({num_logits, c.vocab_size}, DType::kF32);
    ops::matmul(selected_normed, lm_head_, nullptr, logits);
    return logits;
}

}  // namespace taco
