#include "model/decoder.h"

#include <cmath>
#include <set>

#include "core/check.h"
#include "kernels/ops.h"
#include "model/alibi.h"
#include "model/arch_registry.h"
#include "model/norm_head.h"
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

    // A norm's weight with the architecture's stored offset added (Gemma stores weight - 1), and its bias.
    Status norm(const std::string& weight_name, int64_t size, Tensor& weight, Tensor* bias) {
        TACO_ASSIGN_OR_RETURN(weight, vector(weight_name, size));
        for (int64_t i = 0; i < size; ++i) weight.as<float>()[i] += spec_.norm_weight_offset;
        if (bias != nullptr && spec_.norm_bias) {
            if (!ends_with(weight_name, ".weight"))
                return error("{}: norm '{}' must be named *.weight", checkpoint_.dir(), weight_name);
            std::string bias_name = weight_name.substr(0, weight_name.size() - 7) + ".bias";
            TACO_ASSIGN_OR_RETURN(*bias, vector(bias_name, size));
        }
        return Status::ok();
    }

    // Rows [begin, begin + rows) of a fused [total_rows, cols] linear layer: a view, no copy.
    Result<std::vector<LinearWeights>> split_linear(const std::string& prefix, const std::vector<int64_t>& parts,
                                                    int64_t in_features, bool bias) {
        int64_t total = 0;
        for (int64_t p : parts) total += p;
        TACO_ASSIGN_OR_RETURN(LinearWeights fused, linear(prefix, total, in_features, bias));
        std::vector<LinearWeights> out;
        int64_t begin = 0;
        const size_t row_bytes = size_t(in_features) * dtype_size_bytes(fused.weight.dtype);
        for (int64_t rows : parts) {
            LinearWeights w;
            w.weight = TensorView(static_cast<uint8_t*>(fused.weight.data) + size_t(begin) * row_bytes,
                                  fused.weight.dtype, {rows, in_features});
            if (bias) {
                w.bias = Tensor::empty({rows}, DType::kF32);
                std::copy_n(fused.bias.as<float>() + begin, rows, w.bias.as<float>());
            }
            out.push_back(std::move(w));
            begin += rows;
        }
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

    // A fused qkv projection whose rows must be regrouped (spec.qkv_layout) or that was transposed: copies of the
    // q, k and v rows in the on-disk dtype.
    Status regrouped_qkv(const std::string& prefix, int64_t heads, int64_t kv_heads, int64_t head_dim,
                         int64_t in_features, bool bias, DecoderLayerWeights& w) {
        auto layout = qkv_rows(spec_.qkv_layout, heads, kv_heads, head_dim);
        if (!layout.is_ok())
            return error("{}: tensor '{}.weight': {}", checkpoint_.dir(), prefix, layout.status().message());
        const QkvRows& rows = *layout;
        TACO_ASSIGN_OR_RETURN(LinearWeights fused,
                              linear(prefix, (heads + 2 * kv_heads) * head_dim, in_features, bias));
        for (auto [part, part_rows] : {std::pair{&w.q, &rows.q}, std::pair{&w.k, &rows.k}, std::pair{&w.v, &rows.v}}) {
            part->storage = gather_rows(fused.weight, *part_rows);
            part->weight = part->storage.view();
            if (bias) part->bias = gather_rows(fused.bias, *part_rows);
        }
        return Status::ok();
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

// q_norm / k_norm over head_dim: one shared vector, or one per head stacked into [heads, head_dim].
Status bind_qk_norms(WeightBinder& binder, const ModelConfig& c, const ArchSpec& spec, int64_t layer,
                     DecoderLayerWeights& w) {
    auto bind = [&](const std::string& pattern, int64_t heads, Tensor& out, Tensor& bias) -> Status {
        const std::string name = layer_name(pattern, layer);
        if (!spec.qk_norm_per_head) return binder.norm(name, c.head_dim, out, &bias);
        const auto at = name.find("{h}");
        if (at == std::string::npos) return error("{}: per-head norm name '{}' has no {{h}}", spec.name, pattern);
        out = Tensor::empty({heads, c.head_dim}, DType::kF32);
        for (int64_t h = 0; h < heads; ++h) {
            std::string head_name = name;
            head_name.replace(at, 3, std::to_string(h));
            Tensor one;
            TACO_RETURN_IF_ERROR(binder.norm(head_name, c.head_dim, one, nullptr));
            std::copy_n(one.as<float>(), c.head_dim, out.as<float>() + h * c.head_dim);
        }
        return Status::ok();
    };
    TACO_RETURN_IF_ERROR(bind(spec.names.q_norm, c.num_attention_heads, w.q_norm, w.q_norm_bias));
    return bind(spec.names.k_norm, c.num_key_value_heads, w.k_norm, w.k_norm_bias);
}

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
    decoder->rotary_long_ = decoder->rotary_->long_rope_tables();
    if (decoder->config_.rope_local) {
        ModelConfig local = decoder->config_;
        local.rope = *decoder->config_.rope_local;
        decoder->rotary_local_ = std::make_unique<RotaryTables>(local);
    }
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
        TACO_RETURN_IF_ERROR(binder.norm(n.final_norm, c.hidden_size, final_norm_, &final_norm_bias_));
    }
    // Tied heads: transformers drops lm_head.weight when saving, but some checkpoints keep a copy.
    if (spec_.tied_embeddings && !checkpoint_->contains(n.lm_head)) {
        lm_head_ = embed_;
    } else {
        TACO_ASSIGN_OR_RETURN(lm_head_, binder.matrix(n.lm_head, c.vocab_size, embed_dim));
    }
    // GPT-style families
    if (spec_.lm_head_bias) {
        const std::string stem =
            ends_with(n.lm_head, ".weight") ? n.lm_head.substr(0, n.lm_head.size() - 7) : n.lm_head;
        TACO_ASSIGN_OR_RETURN(lm_head_bias_, binder.vector(stem + ".bias", c.vocab_size));
    }
    if (spec_.norm_head) {
        lm_head_normalized_ = rows_l2_normalized(lm_head_);
        lm_head_ = lm_head_normalized_.view();
    }
    if (!n.pos_embed.empty()) {
        TACO_ASSIGN_OR_RETURN(
            pos_embed_, binder.matrix(n.pos_embed, c.max_position_embeddings + spec_.position_offset, c.hidden_size));
    }
    if (!n.embed_norm.empty()) {
        TACO_RETURN_IF_ERROR(binder.norm(n.embed_norm, c.hidden_size, embed_norm_, &embed_norm_bias_));
    }
    if (!n.project_in.empty()) {
        TACO_ASSIGN_OR_RETURN(project_in_, binder.linear(n.project_in, c.hidden_size, embed_dim, false));
        TACO_ASSIGN_OR_RETURN(project_out_, binder.linear(n.project_out, embed_dim, c.hidden_size, false));
    }
    if (spec_.positions == PositionEncoding::kAlibi) {
        alibi_slopes_ = alibi_slopes(c.num_attention_heads);
        // Falcon rounds its slopes to bfloat16 before use.
        if (spec_.alibi_scaled)
            for (float& slope : alibi_slopes_) slope = bf16_to_f32(f32_to_bf16(slope));
    }
    layers_.resize(size_t(c.num_hidden_layers));
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        DecoderLayerWeights& w = layers_[size_t(l)];
        auto name = [l](const std::string& pattern) { return layer_name(pattern, l); };
        TACO_RETURN_IF_ERROR(binder.norm(name(n.input_norm), c.hidden_size, w.input_norm, &w.input_norm_bias));
        if (!spec_.parallel_residual || spec_.parallel_mlp_norm) {
            TACO_RETURN_IF_ERROR(binder.norm(name(n.post_attention_norm), c.hidden_size, w.post_attention_norm,
                                             &w.post_attention_norm_bias));
        }
        if (spec_.sandwich_norms) {
            TACO_RETURN_IF_ERROR(
                binder.norm(name(n.pre_feedforward_norm), c.hidden_size, w.pre_feedforward_norm, nullptr));
            TACO_RETURN_IF_ERROR(
                binder.norm(name(n.post_feedforward_norm), c.hidden_size, w.post_feedforward_norm, nullptr));
        }
        if (spec_.fused_qkv && (spec_.qkv_layout != QkvLayout::kConcatenated || spec_.transposed_linears)) {
            TACO_RETURN_IF_ERROR(binder.regrouped_qkv(name(n.qkv_proj), c.num_attention_heads, c.num_key_value_heads,
                                                      c.head_dim, c.hidden_size, spec_.qkv_bias, w));
        } else if (spec_.fused_qkv) {
            TACO_ASSIGN_OR_RETURN(auto qkv, binder.split_linear(name(n.qkv_proj), {q_size, kv_size, kv_size},
                                                                c.hidden_size, spec_.qkv_bias));
            w.q = std::move(qkv[0]), w.k = std::move(qkv[1]), w.v = std::move(qkv[2]);
        } else {
            TACO_ASSIGN_OR_RETURN(w.q, binder.linear(name(n.q_proj), q_size, c.hidden_size, spec_.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.k, binder.linear(name(n.k_proj), kv_size, c.hidden_size, spec_.qkv_bias));
            TACO_ASSIGN_OR_RETURN(w.v, binder.linear(name(n.v_proj), kv_size, c.hidden_size, spec_.qkv_bias));
        }
        TACO_ASSIGN_OR_RETURN(w.o, binder.linear(name(n.o_proj), c.hidden_size, q_size, spec_.o_bias));
        if (spec_.qk_norm) TACO_RETURN_IF_ERROR(bind_qk_norms(binder, c, spec_, l, w));
        if (spec_.moe.is_sparse(l)) {
            TACO_ASSIGN_OR_RETURN(MoeBlock moe,
                                  MoeBlock::bind(spec_.moe, l, c.hidden_size, spec_.activation, binder.moe_source()));
            w.moe = std::make_shared<const MoeBlock>(std::move(moe));
        } else {
            if (spec_.fused_gate_up) {
                TACO_ASSIGN_OR_RETURN(
                    auto gate_up, binder.split_linear(name(n.gate_up_proj), {c.intermediate_size, c.intermediate_size},
                                                      c.hidden_size, spec_.mlp_bias));
                w.gate = std::move(gate_up[0]), w.up = std::move(gate_up[1]);
            } else {
                if (spec_.gated_mlp) {
                    TACO_ASSIGN_OR_RETURN(
                        w.gate, binder.linear(name(n.gate_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
                }
                TACO_ASSIGN_OR_RETURN(
                    w.up, binder.linear(name(n.up_proj), c.intermediate_size, c.hidden_size, spec_.mlp_bias));
            }
            TACO_ASSIGN_OR_RETURN(w.down,
                                  binder.linear(name(n.down_proj), c.hidden_size, c.intermediate_size, spec_.mlp_bias));
        }
        const auto& layer_types = spec_.layer_types.empty() ? c.layer_types : spec_.layer_types;
        bool sliding = spec_.uses_sliding_window && layer_types[size_t(l)] == LayerAttention::kSliding;
        w.sliding_window = sliding ? int(c.sliding_window) : 0;
        w.local_rotary = sliding && c.rope_local.has_value();
    }
    return binder.check_all_used().with_context(spec_.name);
}

// Norm weights hold the stored offset already (WeightBinder::norm).
void Decoder::norm(const TensorView& x, const Tensor& weight, const Tensor& bias, const TensorView& out) const {
    const float eps = float(spec_.norm_eps.value_or(config_.rms_norm_eps));
    switch (spec_.norm) {
        case NormKind::kRmsNorm: ops::rms_norm(x, weight, eps, 0.0f, out); return;
        case NormKind::kLayerNorm:
            ops::layer_norm(x, weight, bias.defined() ? &bias.view() : nullptr, eps, out);
            return;
    }
}

void Decoder::qk_norm(const Tensor& weight, const Tensor& bias, const TensorView& x) const {
    const float eps = float(spec_.norm_eps.value_or(config_.rms_norm_eps));
    if (spec_.qk_norm_per_head) {
        TACO_CHECK(spec_.norm == NormKind::kLayerNorm);  // StableLM's LayerNorm per head, no bias
        ops::per_head_layer_norm(x, weight, nullptr, eps);
        return;
    }
    TensorView rows(x.data, DType::kF32, {x.shape[0] * x.shape[1], x.shape[2]});
    switch (spec_.norm) {
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
                              spec_.neox_rotary);
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
                              spec_.neox_rotary);
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
    if (spec_.qk_norm) {
        qk_norm(w.q_norm, w.q_norm_bias, q3);
        qk_norm(w.k_norm, w.k_norm_bias, k3);
    }
    if (spec_.positions == PositionEncoding::kRotary) {
        apply_rotary(w, batch, q3);
        apply_rotary(w, batch, k3);
    }
    ops::write_kv_cache(k3, v3, batch.slot_mapping, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)]);
    Tensor attn = Tensor::empty({t, c.num_attention_heads, c.head_dim}, DType::kF32);
    ops::AttentionParams params;
    params.scale = attention_scale(layer_index);
    if (!alibi_slopes_.empty()) params.alibi_slopes = alibi_slopes_.data();
    params.alibi_bf16_key_positions = spec_.alibi_scaled;
    params.sliding_window = w.sliding_window;
    params.logit_softcap = spec_.attn_logit_softcap;
    ops::paged_attention(q3, kv.k[size_t(layer_index)], kv.v[size_t(layer_index)], batch.attention, params, attn);
    TensorView attn2(attn.as<float>(), DType::kF32, {t, c.num_attention_heads * c.head_dim});
    ops::matmul(attn2, w.o.weight, w.o.bias_or_null(), out);
}

void Decoder::mlp_block(const DecoderLayerWeights& w, const TensorView& x, const TensorView& out) {
    if (w.moe) return w.moe->forward(x, out);
    const int64_t t = x.shape[0];
    Tensor up = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
    if (!spec_.gated_mlp) {
        ops::matmul(x, w.up.weight, w.up.bias_or_null(), up);
        ops::activation_inplace(up, spec_.activation);
        ops::matmul(up, w.down.weight, w.down.bias_or_null(), out);
        return;
    }
    Tensor gate = Tensor::empty({t, config_.intermediate_size}, DType::kF32);
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
    if (rotary_local_) rotary_local_->ensure(max_position + 1);
    if (rotary_long_) rotary_long_->ensure(max_position + 1);

    Tensor hidden = Tensor::empty({t, c.hidden_size}, DType::kF32);  // the residual stream
    Tensor normed = Tensor::empty({t, c.hidden_size}, DType::kF32);
    Tensor block_out = Tensor::empty({t, c.hidden_size}, DType::kF32);
    embed_tokens(batch, hidden);
    // transformers multiplies by torch.tensor(hidden_size ** 0.5) in the activations' dtype: fp32 here.
    if (spec_.scale_embeddings) ops::scale_inplace(hidden, float(std::sqrt(double(c.hidden_size))));
    Tensor sandwich = spec_.sandwich_norms ? Tensor::empty({t, c.hidden_size}, DType::kF32) : Tensor();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
        const DecoderLayerWeights& w = layers_[size_t(l)];
        if (spec_.post_norm) {
            post_norm_layer(w, l, batch, kv, hidden);
            continue;
        }
        norm(hidden, w.input_norm, w.input_norm_bias, normed);
        attention_block(w, l, batch, kv, normed, block_out);
        if (spec_.parallel_residual) {
            // The MLP's own norm reads x before the attention output joins it.
            if (spec_.parallel_mlp_norm) norm(hidden, w.post_attention_norm, w.post_attention_norm_bias, normed);
            ops::add_inplace(hidden, block_out);
            mlp_block(w, normed, block_out);
            ops::add_inplace(hidden, block_out);
            continue;
        }
        if (spec_.sandwich_norms) {
            norm(block_out, w.post_attention_norm, w.post_attention_norm_bias, sandwich);
            ops::add_inplace(hidden, sandwich);
            norm(hidden, w.pre_feedforward_norm, Tensor(), normed);
            mlp_block(w, normed, block_out);
            norm(block_out, w.post_feedforward_norm, Tensor(), sandwich);
            ops::add_inplace(hidden, sandwich);
            continue;
        }
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
    if (spec_.final_logit_softcap > 0) ops::softcap_inplace(logits, spec_.final_logit_softcap);
    return logits;
}

}  // namespace taco
