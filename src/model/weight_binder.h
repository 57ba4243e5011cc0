// WeightBinder: hands out checkpoint tensors by name for Decoder::bind_weights and MoeBlock::bind, checking shape
// and dtype, rearranging layouts the matmul cannot read (weight_layout.h), and remembering which tensors were used.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/safetensors.h"
#include "model/arch_spec.h"
#include "model/decoder_layer_weights.h"
#include "model/model_config.h"
#include "model/moe_block.h"

namespace taco {

// `pattern` with its "{}" replaced by the layer index.
std::string layer_name(const std::string& pattern, int64_t layer);

// --load-format dummy: the tensors a binder hands out when there is no checkpoint, made on request with the shape
// asked for, uniform in [-1e-3, 1e-3] as vLLM's dummy loader; owned here until the decoder has placed them.
class DummyWeights {
public:
    // `budget_bytes`: the most they may take in all (the host memory available; -1: unbounded). A tensor past it is
    // an error naming the sizes, before it is allocated: a config within the limits of core/limits.h may still
    // describe more weights than the machine holds.
    DummyWeights(DType dtype, uint64_t seed, int64_t budget_bytes = -1)
        : dtype_(dtype), seed_(seed), budget_bytes_(budget_bytes) {}
    Result<TensorView> make(const std::string& name, std::span<const int64_t> dims);
    void release() { tensors_.clear(); }

private:
    DType dtype_;
    uint64_t seed_;
    int64_t budget_bytes_;
    int64_t made_bytes_ = 0;
    std::vector<Tensor> tensors_;
};

// A tensor nobody asked for (a wrong name map) is an error rather than silently ignored weights (check_all_used).
class WeightBinder {
public:
    WeightBinder(const Checkpoint& checkpoint, const ArchSpec& spec) : checkpoint_(&checkpoint), spec_(spec) {}
    // No checkpoint: every tensor is made by `dummy` with the shape asked for (load-format dummy).
    WeightBinder(DummyWeights& dummy, const ArchSpec& spec) : dummy_(&dummy), spec_(spec) {}

    // Whether the checkpoint holds `name`. Without a checkpoint every name is there, so the first layout a caller
    // probes (per-expert MoE tensors, the first router name) is the one made.
    bool contains(const std::string& name) const { return checkpoint_ == nullptr || checkpoint_->contains(name); }
    bool is_dummy() const { return checkpoint_ == nullptr; }

    // A [rows, cols] F32, F16 or BF16 matrix as stored: a view, no copy.
    Result<TensorView> matrix(const std::string& name, int64_t rows, int64_t cols);

    // A [size] vector copied to f32 (norm weights, biases).
    Result<Tensor> vector(const std::string& name, int64_t size);

    // A norm's weight with the architecture's stored offset added (Gemma stores weight - 1), and its bias.
    Status norm(const std::string& weight_name, int64_t size, Tensor& weight, Tensor* bias);

    // A fused [sum(parts), in_features] linear layer cut into consecutive row blocks of `parts` rows: views, no copy.
    Result<std::vector<LinearWeights>> split_linear(const std::string& prefix, const std::vector<int64_t>& parts,
                                                    int64_t in_features, bool bias);

    // `prefix`.weight [out_features, in_features] (a transposed copy for Conv1D checkpoints) and `prefix`.bias.
    Result<LinearWeights> linear(const std::string& prefix, int64_t out_features, int64_t in_features, bool bias);

    // A fused qkv projection whose rows must be regrouped (spec.qkv_layout) or that was transposed: copies of the
    // q, k and v rows in the on-disk dtype.
    Status regrouped_qkv(const std::string& prefix, int64_t heads, int64_t kv_heads, int64_t head_dim,
                         int64_t in_features, bool bias, DecoderLayerWeights& w);

    // MoE: what MoeBlock::bind reads through.
    MoeWeightSource moe_source();

    // Every checkpoint tensor must have been used (or be one the architecture ignores).
    Status check_all_used() const;

private:
    // A name not found is looked up again without spec.base_model_prefix (checkpoints saved from the bare model).
    // `dims`: the shape the caller expects (what a dummy tensor gets); empty where the caller checks the shape
    // itself (stacked experts), which a dummy binder never reaches (contains() steers it to the per-expert names).
    Result<TensorView> fetch(const std::string& name, std::initializer_list<int64_t> dims = {});
    const std::string& source_name() const;

    const Checkpoint* checkpoint_ = nullptr;
    DummyWeights* dummy_ = nullptr;
    const ArchSpec& spec_;
    std::set<std::string> used_;
};

// q_norm / k_norm over head_dim: one shared vector, or one per head stacked into [heads, head_dim].
Status bind_qk_norms(WeightBinder& binder, const ModelConfig& c, const ArchSpec& spec, int64_t layer,
                     DecoderLayerWeights& w);

}  // namespace taco
