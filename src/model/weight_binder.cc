#include "model/weight_binder.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "model/weight_layout.h"

namespace taco {
std::string layer_name(const std::string& pattern, int64_t layer) {
    std::string out = pattern;
    auto at = out.find("{}");
    if (at != std::string::npos) out.replace(at, 2, std::to_string(layer));
    return out;
}

Result<TensorView> WeightBinder::matrix(const std::string& name, int64_t rows, int64_t cols) {
    TACO_ASSIGN_OR_RETURN(TensorView t, fetch(name, {rows, cols}));
    if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols)
        return error("{}: tensor '{}' has shape {}, expected [{}, {}]", source_name(), name, t.shape_string(), rows,
                     cols);
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16)
        return error("{}: tensor '{}' has dtype {}; weights must be F32, F16 or BF16", source_name(), name,
                     dtype_name(t.dtype));
    return t;
}

Result<Tensor> WeightBinder::vector(const std::string& name, int64_t size) {
    TACO_ASSIGN_OR_RETURN(TensorView t, fetch(name, {size}));
    if (t.ndim != 1 || t.shape[0] != size)
        return error("{}: tensor '{}' has shape {}, expected [{}]", source_name(), name, t.shape_string(), size);
    if (!dtype_is_float(t.dtype))
        return error("{}: tensor '{}' has dtype {}, expected a float type", source_name(), name, dtype_name(t.dtype));
    Tensor out = Tensor::empty({size}, DType::kF32);
    for (int64_t i = 0; i < size; ++i) out.as<float>()[i] = load_as_f32(t.data, t.dtype, size_t(i));
    return out;
}

Status WeightBinder::norm(const std::string& weight_name, int64_t size, Tensor& weight, Tensor* bias) {
    TACO_ASSIGN_OR_RETURN(weight, vector(weight_name, size));
    for (int64_t i = 0; i < size; ++i) weight.as<float>()[i] += spec_.norm.weight_offset;
    if (bias != nullptr && spec_.norm.bias) {
        if (!weight_name.ends_with(".weight"))
            return error("{}: norm '{}' must be named *.weight", source_name(), weight_name);
        std::string bias_name = weight_name.substr(0, weight_name.size() - 7) + ".bias";
        TACO_ASSIGN_OR_RETURN(*bias, vector(bias_name, size));
    }
    return Status::ok();
}

Result<std::vector<LinearWeights>> WeightBinder::split_linear(const std::string& prefix,
                                                              const std::vector<int64_t>& parts, int64_t in_features,
                                                              bool bias) {
    int64_t total = 0;
    for (int64_t p : parts) total += p;
    TACO_ASSIGN_OR_RETURN(LinearWeights fused, linear(prefix, total, in_features, bias));
    std::vector<LinearWeights> out;
    int64_t begin = 0;
    const size_t row_bytes = size_t(in_features) * dtype_size_bytes(fused.weight.dtype);
    for (int64_t rows : parts) {
        LinearWeights w;
        w.weight = TensorView(static_cast<uint8_t*>(fused.weight.data) + size_t(begin) * row_bytes, fused.weight.dtype,
                              {rows, in_features});
        if (bias) {
            w.bias = Tensor::empty({rows}, DType::kF32);
            std::copy_n(fused.bias.as<float>() + begin, rows, w.bias.as<float>());
        }
        out.push_back(std::move(w));
        begin += rows;
    }
    return out;
}

Result<LinearWeights> WeightBinder::linear(const std::string& prefix, int64_t out_features, int64_t in_features,
                                           bool bias) {
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

Status WeightBinder::regrouped_qkv(const std::string& prefix, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                   int64_t in_features, bool bias, DecoderLayerWeights& w) {
    auto layout = qkv_rows(spec_.attention.qkv_layout, heads, kv_heads, head_dim);
    if (!layout.is_ok()) return error("{}: tensor '{}.weight': {}", source_name(), prefix, layout.status().message());
    const QkvRows& rows = *layout;
    TACO_ASSIGN_OR_RETURN(LinearWeights fused, linear(prefix, (heads + 2 * kv_heads) * head_dim, in_features, bias));
    for (auto [part, part_rows] : {std::pair{&w.q, &rows.q}, std::pair{&w.k, &rows.k}, std::pair{&w.v, &rows.v}}) {
        part->storage = gather_rows(fused.weight, *part_rows);
        part->weight = part->storage.view();
        if (bias) part->bias = gather_rows(fused.bias, *part_rows);
    }
    return Status::ok();
}

MoeWeightSource WeightBinder::moe_source() {
    MoeWeightSource source;
    source.contains = [this](const std::string& name) { return contains(name); };
    source.matrix = [this](const std::string& name, int64_t rows, int64_t cols) { return matrix(name, rows, cols); };
    source.tensor = [this](const std::string& name) { return fetch(name); };
    return source;
}

Status WeightBinder::check_all_used() const {
    std::vector<std::string> unused;
    if (checkpoint_ == nullptr) return Status::ok();
    for (const std::string& name : checkpoint_->tensor_names()) {
        if (used_.count(name)) continue;
        bool ignored = false;
        for (const auto& suffix : spec_.ignored_tensor_suffixes) ignored |= name.ends_with(suffix);
        if (!ignored) unused.push_back(name);
    }
    if (unused.empty()) return Status::ok();
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", '" : "'") + unused[i] + "'";
    if (unused.size() > 5) list += fmt::format(" and {} more", unused.size() - 5);
    return error("{}: {} tensor(s) in the checkpoint are not used by {}: {}", source_name(), unused.size(), spec_.name,
                 list);
}

const std::string& WeightBinder::source_name() const {
    static const std::string dummy = "dummy weights";
    return checkpoint_ != nullptr ? checkpoint_->dir() : dummy;
}

Result<TensorView> WeightBinder::fetch(const std::string& name, std::initializer_list<int64_t> dims) {
    if (checkpoint_ == nullptr) {
        if (dims.size() == 0) return error("dummy weights: no shape is known for tensor '{}'", name);
        if (!used_.insert(name).second) return error("dummy weights: tensor '{}' asked for twice", name);
        return dummy_->make(name, std::span<const int64_t>(dims.begin(), dims.size()));
    }
    const std::string prefix = spec_.base_model_prefix + ".";
    if (!spec_.base_model_prefix.empty() && !checkpoint_->contains(name) && name.rfind(prefix, 0) == 0 &&
        checkpoint_->contains(name.substr(prefix.size())))
        return fetch(name.substr(prefix.size()), dims);
    TACO_ASSIGN_OR_RETURN(TensorView t, checkpoint_->tensor(name));
    used_.insert(name);
    return t;
}

Result<TensorView> DummyWeights::make(const std::string& name, std::span<const int64_t> dims) {
    int64_t bytes = int64_t(dtype_size_bytes(dtype_));
    bool overflow = false;
    for (int64_t d : dims) overflow = overflow || d < 0 || __builtin_mul_overflow(bytes, d, &bytes);
    if (overflow) return error("dummy weights: tensor '{}' has more elements than int64 can count", name);
    if (budget_bytes_ >= 0 && made_bytes_ + bytes > budget_bytes_)
        return error(
            "dummy weights: tensor '{}' ({:.2f} GiB in {}) brings the weights to {:.2f} GiB, past the {:.2f} GiB of "
            "host memory available",
            name, double(bytes) / double(1 << 30), dtype_name(dtype_), double(made_bytes_ + bytes) / double(1 << 30),
            double(budget_bytes_) / double(1 << 30));
    made_bytes_ += bytes;
    Tensor t = Tensor::empty(dims, dtype_, MemoryKind::kHost);
    const int64_t n = t.numel();
    const uint64_t stream = seed_ * 0x9E3779B97F4A7C15ull + tensors_.size() + 1;
    void* data = t.view().data;
    const DType dtype = dtype_;
    // A counter-based hash per element: the same weights for the same seed whatever the thread split.
    ThreadPool::global().parallel_for(n, 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            uint64_t z = stream + uint64_t(i) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            z ^= z >> 31;
            const float u = float(z >> 40) * (1.0f / float(1 << 24));  // [0, 1)
            store_from_f32(data, dtype, size_t(i), (2.0f * u - 1.0f) * 1e-3f);
        }
    });
    tensors_.push_back(std::move(t));
    return tensors_.back().view();
}

// q_norm / k_norm over head_dim: one shared vector, or one per head stacked into [heads, head_dim].
Status bind_qk_norms(WeightBinder& binder, const ModelConfig& c, const ArchSpec& spec, int64_t layer,
                     DecoderLayerWeights& w) {
    auto bind = [&](const std::string& pattern, int64_t heads, Tensor& out, Tensor& bias) -> Status {
        const std::string name = layer_name(pattern, layer);
        if (!spec.attention.qk_norm_per_head) return binder.norm(name, c.head_dim, out, &bias);
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

}  // namespace taco
