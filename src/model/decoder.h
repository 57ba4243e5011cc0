// The generic decoder (ARCHITECTURE.md): embedding -> N x [norm, attention, norm, MLP] -> norm -> lm_head,
// parameterised by an ArchSpec. Weights stay in their on-disk dtype in the mmapped checkpoint and are widened
// to fp32 in registers; small vectors (norms, biases) are copied to fp32 at load.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "io/safetensors.h"
#include "kernels/exec_context.h"
#include "model/arch_spec.h"
#include "model/decoder_layer_weights.h"
#include "model/forward_batch.h"
#include "model/kv_cache_tensors.h"
#include "model/model_config.h"
#include "model/rotary_tables.h"

namespace taco {

struct DecoderRunOptions {
    int64_t max_model_len = 0;  // positions a sequence can reach (rotary tables)
    int64_t head_rows = 256;    // the final norm and lm_head run over at most this many rows at once
    DType activation_dtype = DType::kF32;
};

// Where and in which dtype the weights are served (vLLM's --device, --dtype and --load-format).
struct LoadOptions {
    Device device = Device::kCpu;
    // The dtype matrices are served in; nullopt ("auto"): the checkpoint's, except that fp32 checkpoints are
    // served in bf16 on CUDA (vLLM's rule). On the CPU, activations stay f32 whatever this is; only the
    // matrices are converted. resolve_dtype() maps --dtype's spellings.
    std::optional<DType> dtype;
    // --load-format dummy: every weight random (uniform in [-1e-3, 1e-3] as vLLM's dummy loader, norms 1), from
    // config.json alone: no safetensors are read. For benchmarks.
    bool dummy = false;
    uint64_t dummy_seed = 0;
    bool progress = false;  // a progress bar of the upload on stderr
};

// --dtype's values: "auto" (nullopt), "bfloat16"/"bf16", "float16"/"half"/"fp16", "float32"/"float"/"fp32"; anything
// else is an error naming the value.
Result<std::optional<DType>> resolve_dtype(const std::string& name);

class DummyWeights;
class WeightBinder;

class Decoder {
public:
    // Loads config.json, generation_config.json and the safetensors of a model folder. Every tensor the
    // architecture needs must be present with the right shape, and every tensor present must be used.
    ~Decoder();
    static Result<std::unique_ptr<Decoder>> load(const std::string& dir);
    static Result<std::unique_ptr<Decoder>> load(const std::string& dir, ModelConfig config);
    // As above, placed and converted as `options` say (weights on the device: streamed through pinned buffers).
    static Result<std::unique_ptr<Decoder>> load(const std::string& dir, const LoadOptions& options);

    // Where the weights are, and the dtype matrices are served in (the activation dtype of a CUDA runner).
    Device device() const { return device_; }
    DType weight_dtype() const { return weight_dtype_; }

    const ModelConfig& config() const { return config_; }
    const ArchSpec& spec() const { return spec_; }
    // The most positions a sequence can have: the learned position table's rows, else unlimited (INT64_MAX).
    int64_t max_positions() const;

    // Builds what the forward pass reads but the checkpoint does not hold, once, before any forward pass: rotary
    // tables for positions [0, max_model_len), the head's chunk of rows, the activation dtype. Calling it again
    // (another runner on the same weights) keeps the larger tables.
    void prepare(const DecoderRunOptions& options);
    // Where LongRoPE's long rows start in the rotary table (ForwardBatch::rotary_offsets).
    RotaryLayout rotary_layout() const;

    // Runs the batch, writing its K/V into `kv` and the logits of its logits_indices rows into `logits`
    // ([num_logits, vocab] f32). Every activation comes from `ws` (reset by the caller); nothing is allocated and
    // no activation is read on the host. With ctx.dry_run, only shapes are checked (workspace sizing).
    void forward(const ExecContext& ctx, const ForwardBatch& batch, KvCacheTensors& kv, Workspace& ws,
                 const TensorView& logits) const;

private:
    Decoder() = default;
    Status bind_weights(WeightBinder& binder);
    // Moves (and converts) every weight to options.device / the served dtype (decoder_place.cc); `stored`: the
    // checkpoint's dtype, which "auto" serves.
    Status place_weights(const LoadOptions& options, DType stored);
    // One forward pass: its context, batch, cache and workspace.
    struct Pass {
        const ExecContext& ctx;
        const ForwardBatch& batch;
        KvCacheTensors& kv;
        Workspace& ws;
        DType act;  // activation dtype
        TensorView alloc(std::initializer_list<int64_t> dims) const { return ws.alloc(dims, act); }
    };
    // hidden: the residual stream [T, H], updated in place. pending [T, H], defined for ResidualLayout::kSequential
    // only: the previous layer's MLP output, not yet added to hidden (layers after the first add it in the launch of
    // their first norm, ops::add_rms_norm); the layer leaves its own MLP output there, and forward() adds the last.
    void layer(const Pass& pass, const DecoderLayerWeights& w, int64_t layer_index, const TensorView& hidden,
               const TensorView& pending) const;
    // hidden += delta, then out = norm(hidden): one launch for RMSNorm.
    void add_and_norm(const Pass& pass, const TensorView& hidden, const TensorView& delta, const Tensor& weight,
                      const Tensor& bias, const TensorView& out) const;
    void attention_block(const Pass& pass, const DecoderLayerWeights& w, int64_t layer_index, const TensorView& x,
                         const TensorView& out) const;
    void mlp_block(const Pass& pass, const DecoderLayerWeights& w, const TensorView& x, const TensorView& out) const;
    void head(const Pass& pass, const TensorView& hidden, const TensorView& logits) const;
    void norm(const Pass& pass, const TensorView& x, const Tensor& weight, const Tensor& bias,
              const TensorView& out) const;
    // x: [T, heads, head_dim], in place; bias undefined for none.
    void qk_norm(const Pass& pass, const Tensor& weight, const Tensor& bias, const TensorView& x) const;
    // GPT-style families (decoder_gpt.cc)
    void embed_tokens(const Pass& pass, const TensorView& hidden) const;  // embedding, project_in, positions
    void post_norm_layer(const Pass& pass, const DecoderLayerWeights& w, int64_t layer_index,
                         const TensorView& hidden) const;
    float attention_scale(int64_t layer_index) const;

    ModelConfig config_;
    ArchSpec spec_;
    Device device_ = Device::kCpu;
    DType weight_dtype_ = DType::kF32;
    std::unique_ptr<Checkpoint> checkpoint_;  // owns the mappings the views point into (when not placed)
    std::unique_ptr<DummyWeights> dummy_;     // load-format dummy: the host weights bound (until placed)
    std::deque<Tensor> placed_;               // the weights place_weights() made (device or converted copies)
    TensorView embed_;                        // [vocab, hidden]
    TensorView lm_head_;                      // [vocab, hidden]
    Tensor final_norm_;                       // [hidden] f32
    std::vector<DecoderLayerWeights> layers_;
    std::unique_ptr<RotaryTables> rotary_;  // [2 x] max_model_len rows after prepare() (LongRoPE: short, then long)
    DecoderRunOptions run_;                 // as prepare() was last given them
    // Llama-style families
    Tensor final_norm_bias_;                      // [hidden] f32 when NormSpec::bias
    std::unique_ptr<RotaryTables> rotary_local_;  // sliding layers' rope (Gemma3), else null
    // GPT-style families
    TensorView pos_embed_;                    // [max_positions + position_offset, hidden], learned positions only
    Tensor embed_norm_, embed_norm_bias_;     // [hidden] f32 (Bloom)
    LinearWeights project_in_, project_out_;  // OPT with word_embed_proj_dim != hidden_size
    Tensor lm_head_bias_;                     // [vocab] f32
    Tensor alibi_slopes_;                     // [heads] f32, ALiBi only (rounded to bfloat16 when alibi_scaled)
    // Remote-code families
    Tensor lm_head_normalized_;  // [vocab, hidden] f32, HeadSpec::norm_head only; lm_head_ views it
};

}  // namespace taco
