// Placeholder definitions of the CUDA ops whose kernels are being written on a branch, so the tree links meanwhile;
// each is deleted as its kernel lands (this whole file goes with the last one).
#include "core/check.h"
#include "kernels/cuda/cuda_ops.h"

namespace taco::cuda {

void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out) {
    TACO_CHECK_MSG(false, "embedding: the CUDA kernel is not written yet");
}

void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out) {
    TACO_CHECK_MSG(false, "gather_rows: the CUDA kernel is not written yet");
}

void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out) {
    TACO_CHECK_MSG(false, "rms_norm: the CUDA kernel is not written yet");
}

void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out) {
    TACO_CHECK_MSG(false, "layer_norm: the CUDA kernel is not written yet");
}

void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps) {
    TACO_CHECK_MSG(false, "per_head_layer_norm: the CUDA kernel is not written yet");
}

void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y) {
    TACO_CHECK_MSG(false, "add_inplace: the CUDA kernel is not written yet");
}

void scale_inplace(const ExecContext& ctx, const TensorView& x, float s) {
    TACO_CHECK_MSG(false, "scale_inplace: the CUDA kernel is not written yet");
}

void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap) {
    TACO_CHECK_MSG(false, "softcap_inplace: the CUDA kernel is not written yet");
}

void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, ops::Activation act,
                      const TensorView& out) {
    TACO_CHECK_MSG(false, "gated_activation: the CUDA kernel is not written yet");
}

void activation_inplace(const ExecContext& ctx, const TensorView& x, ops::Activation act) {
    TACO_CHECK_MSG(false, "activation_inplace: the CUDA kernel is not written yet");
}

void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style) {
    TACO_CHECK_MSG(false, "rotary_embedding: the CUDA kernel is not written yet");
}

void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache) {
    TACO_CHECK_MSG(false, "write_kv_cache: the CUDA kernel is not written yet");
}

void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const ops::MoeRouteParams& params, const TensorView& ids, const TensorView& weights) {
    TACO_CHECK_MSG(false, "moe_route: the CUDA kernel is not written yet");
}

void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets) {
    TACO_CHECK_MSG(false, "moe_align: the CUDA kernel is not written yet");
}

void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out) {
    TACO_CHECK_MSG(false, "moe_gather: the CUDA kernel is not written yet");
}

void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y) {
    TACO_CHECK_MSG(false, "grouped_matmul: the CUDA kernel is not written yet");
}

void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out) {
    TACO_CHECK_MSG(false, "moe_combine: the CUDA kernel is not written yet");
}

void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate,
                       const TensorView& out) {
    TACO_CHECK_MSG(false, "add_sigmoid_gated: the CUDA kernel is not written yet");
}

}  // namespace taco::cuda
