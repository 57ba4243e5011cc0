// Decoder::place_weights: every weight the forward pass reads, to the device and dtype it is served in
// (LoadOptions), and --dtype's spellings.
#include <set>
#include <string>
#include <vector>

#include "core/log.h"
#include "model/decoder.h"
#include "model/weight_placer.h"

namespace taco {

Result<std::optional<DType>> resolve_dtype(const std::string& name) {
    if (name == "auto") return std::optional<DType>();
    if (name == "bfloat16" || name == "bf16") return std::optional<DType>(DType::kBF16);
    if (name == "float16" || name == "half" || name == "fp16") return std::optional<DType>(DType::kF16);
    if (name == "float32" || name == "float" || name == "fp32") return std::optional<DType>(DType::kF32);
    return error("--dtype '{}': expected auto, bfloat16, float16 (half) or float32 (float)", name);
}

namespace {

// The dtype matrices are served in: --dtype, else the checkpoint's, except fp32 checkpoints on CUDA (vLLM: bf16).
DType served_dtype(const LoadOptions& options, DType stored) {
    if (options.dtype) return *options.dtype;
    if (options.device == Device::kCuda && stored == DType::kF32) return DType::kBF16;
    return stored;
}

}  // namespace

Status Decoder::place_weights(const LoadOptions& options, DType stored) {
    const DType served = served_dtype(options, stored);
    weight_dtype_ = served;
    device_ = options.device;

    // Every matrix view (embeddings and head included) and every small f32 tensor the forward pass reads.
    std::vector<TensorView*> matrices = {&embed_, &lm_head_, &pos_embed_, &project_in_.weight, &project_out_.weight};
    std::vector<Tensor*> vectors = {&final_norm_,   &final_norm_bias_, &embed_norm_,      &embed_norm_bias_,
                                    &lm_head_bias_, &alibi_slopes_,    &project_in_.bias, &project_out_.bias};
    std::vector<LinearWeights*> linears = {&project_in_, &project_out_};
    for (DecoderLayerWeights& w : layers_) {
        for (LinearWeights* l : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down}) {
            matrices.push_back(&l->weight);
            vectors.push_back(&l->bias);
            linears.push_back(l);
        }
        for (Tensor* t :
             {&w.input_norm, &w.post_attention_norm, &w.input_norm_bias, &w.post_attention_norm_bias,
              &w.pre_feedforward_norm, &w.post_feedforward_norm, &w.q_norm, &w.k_norm, &w.q_norm_bias, &w.k_norm_bias})
            vectors.push_back(t);
    }
    // Served bytes, each matrix once (a tied head is the embedding's view; the placer places it once too), and of
    // those the bytes placing allocates: on a device all, on the CPU the converted matrices only.
    size_t total = 0, allocated = 0;
    const bool on_device = options.device != Device::kCpu;
    std::set<const void*> counted;
    for (const TensorView* m : matrices)
        if (m->data != nullptr && counted.insert(m->data).second) {
            total += size_t(m->numel()) * dtype_size_bytes(served);
            if (on_device || m->dtype != served) allocated += size_t(m->numel()) * dtype_size_bytes(served);
        }
    for (const DecoderLayerWeights& w : layers_)
        if (w.moe != nullptr) {
            total += w.moe->matrix_elements() * dtype_size_bytes(served);
            if (on_device || stored != served) allocated += w.moe->matrix_elements() * dtype_size_bytes(served);
        }

    TACO_ASSIGN_OR_RETURN(std::unique_ptr<WeightPlacer> placer,
                          WeightPlacer::create(options.device, served, options.progress, total));
    TACO_RETURN_IF_ERROR(placer->check_room(allocated));
    for (TensorView* m : matrices)
        if (m->data != nullptr) *m = placer->matrix(*m);
    for (Tensor* v : vectors)
        if (v->defined()) *v = placer->vector(std::move(*v));
    for (DecoderLayerWeights& w : layers_)
        if (w.moe != nullptr) std::const_pointer_cast<MoeBlock>(w.moe)->place(*placer);
    placer->finish();
    // Host copies made at bind time (transposed or regrouped matrices, the normalised head) are not read any more
    // once placed elsewhere.
    for (LinearWeights* l : linears)
        if (l->storage.defined() && l->storage.view().data != l->weight.data) l->storage = Tensor();
    if (lm_head_normalized_.defined() && lm_head_normalized_.view().data != lm_head_.data)
        lm_head_normalized_ = Tensor();
    placed_ = placer->take_storage();
    log_info("weights: {:.1f} MiB in {} on the {}", double(total) / double(1 << 20), dtype_name(served),
             device_name(device_));
    return Status::ok();
}

}  // namespace taco
