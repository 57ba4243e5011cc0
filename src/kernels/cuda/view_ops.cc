// cuda_ops.h's ops other than matmul, paged attention and copy: each view is unpacked into the plain arguments of
// its kernel's launcher (launch.h). ops.cc has checked shapes, dtypes, devices and contiguity; what is left to check
// here is what only the CUDA kernels ask: one activation dtype for all activation operands of an op (the decoder
// gives them one; a mix is refused rather than misread).
#include "core/check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/skinny_gemm.h"

namespace taco::cuda {
namespace {

void check_same_dtype(const char* op, const TensorView& a, const char* a_name, const TensorView& b,
                      const char* b_name) {
    TACO_CHECK_MSG(a.dtype == b.dtype, "{}: {} is {} and {} is {}; the CUDA kernel takes one activation dtype", op,
                   a_name, dtype_name(a.dtype), b_name, dtype_name(b.dtype));
}

launch::ActivationKind kind_of(ops::Activation act) {
    switch (act) {
        case ops::Activation::kSilu: return launch::ActivationKind::kSilu;
        case ops::Activation::kGeluTanh: return launch::ActivationKind::kGeluTanh;
        case ops::Activation::kGeluErf: return launch::ActivationKind::kGeluErf;
        case ops::Activation::kRelu: return launch::ActivationKind::kRelu;
        case ops::Activation::kRelu2: return launch::ActivationKind::kRelu2;
    }
    TACO_CHECK_MSG(false, "unknown activation {}", int(act));
    return launch::ActivationKind::kSilu;
}

template <class T>
const T* const_data(const TensorView& t) {
    return static_cast<const T*>(t.data);
}
template <class T>
T* data(const TensorView& t) {
    return static_cast<T*>(t.data);
}
// An optional operand: null when absent (a null view pointer or an undefined view).
const float* optional_f32(const TensorView* t) { return t != nullptr ? const_data<float>(*t) : nullptr; }

}  // namespace

void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out) {
    launch::embedding(ctx.stream, const_data<int32_t>(ids), ids.shape[0], table.data, table.dtype, table.shape[0],
                      table.shape[1], out.data, out.dtype);
}

void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out) {
    launch::gather_rows(ctx.stream, src.data, src.dtype, src.shape[0], src.shape[1], const_data<int32_t>(indices),
                        indices.shape[0], out.data);
}

void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out) {
    check_same_dtype("rms_norm", x, "x", out, "out");
    launch::rms_norm(ctx.stream, x.data, out.data, x.dtype, x.shape[0], x.shape[1], const_data<float>(weight), eps,
                     weight_offset);
}

void add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& y, const TensorView& weight, float eps,
                  float weight_offset, const TensorView& out) {
    check_same_dtype("add_rms_norm", x, "x", out, "out");
    launch::add_rms_norm(ctx.stream, x.data, y.data, out.data, x.dtype, x.shape[0], x.shape[1],
                         const_data<float>(weight), eps, weight_offset);
}

void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out) {
    check_same_dtype("layer_norm", x, "x", out, "out");
    launch::layer_norm(ctx.stream, x.data, out.data, x.dtype, x.shape[0], x.shape[1], const_data<float>(weight),
                       optional_f32(bias), eps);
}

void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps) {
    launch::per_head_layer_norm(ctx.stream, x.data, x.dtype, x.shape[0], x.shape[1], x.shape[2],
                                const_data<float>(weight), optional_f32(bias), eps);
}

void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y) {
    launch::add_inplace(ctx.stream, x.data, y.data, x.dtype, x.numel());
}

void scale_inplace(const ExecContext& ctx, const TensorView& x, float s) {
    launch::scale_inplace(ctx.stream, x.data, x.dtype, x.numel(), s);
}

void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap) {
    launch::softcap_inplace(ctx.stream, x.data, x.dtype, x.numel(), cap);
}

void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, ops::Activation act,
                      const TensorView& out) {
    check_same_dtype("gated_activation", gate, "gate", up, "up");
    check_same_dtype("gated_activation", gate, "gate", out, "out");
    launch::gated_activation(ctx.stream, gate.data, up.data, out.data, gate.dtype, gate.numel(), kind_of(act));
}

void gated_projection_with(const ExecContext& ctx, const TensorView& x, const ops::Projection& gate,
                           const ops::Projection& up, ops::Activation act, const TensorView& out, GatedProjection how) {
    const int64_t m = x.shape[0], n = gate.w->shape[0], k = x.shape[1];
    const bool wanted = how == GatedProjection::kFused || (how == GatedProjection::kAuto && fused_gated_up_enabled());
    // out is written while other blocks still read x: never fused over an x it overlaps.
    const auto* x_begin = static_cast<const uint8_t*>(x.data);
    const auto* out_begin = static_cast<const uint8_t*>(out.data);
    const bool apart = out_begin + out.nbytes() <= x_begin || x_begin + x.nbytes() <= out_begin;
    if (wanted && m > 0 && apart && x.dtype == gate.w->dtype && x.dtype == up.w->dtype && out.dtype == x.dtype &&
        x.is_contiguous() && out.is_contiguous() &&
        skinny_gated_applies(m, n, k, x.dtype, x.data, gate.w->data, up.w->data)) {
        const SkinnyGated p{x.data,
                            gate.w->data,
                            gate.bias != nullptr ? static_cast<const float*>(gate.bias->data) : nullptr,
                            up.w->data,
                            up.bias != nullptr ? static_cast<const float*>(up.bias->data) : nullptr,
                            out.data,
                            m,
                            n,
                            k,
                            kind_of(act)};
        skinny_gated(p, x.dtype, ctx.stream);
        return;
    }
    const ops::Projection both[] = {gate, up};
    cuda::matmuls(ctx, x, both);
    cuda::gated_activation(ctx, gate.y, up.y, act, out);
}

void gated_projection(const ExecContext& ctx, const TensorView& x, const ops::Projection& gate,
                      const ops::Projection& up, ops::Activation act, const TensorView& out) {
    gated_projection_with(ctx, x, gate, up, act, out, GatedProjection::kAuto);
}

void activation_inplace(const ExecContext& ctx, const TensorView& x, ops::Activation act) {
    launch::activation_inplace(ctx.stream, x.data, x.dtype, x.numel(), kind_of(act));
}

void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style) {
    const int32_t* offsets = table_offsets.ndim > 0 ? const_data<int32_t>(table_offsets) : nullptr;
    launch::rotary_embedding(ctx.stream, x.data, x.dtype, x.shape[0], x.shape[1], x.shape[2],
                             const_data<int32_t>(positions), offsets, const_data<float>(cos_table),
                             const_data<float>(sin_table), cos_table.shape[0], rotary_dim, neox_style);
}

void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache) {
    check_same_dtype("write_kv_cache", k, "k", v, "v");
    TACO_CHECK_MSG(k_cache.dtype == v_cache.dtype, "write_kv_cache: k_cache is {} and v_cache is {}",
                   dtype_name(k_cache.dtype), dtype_name(v_cache.dtype));
    launch::write_kv_cache(ctx.stream, k.data, v.data, k.dtype, k.shape[0], k.shape[1] * k.shape[2],
                           const_data<int64_t>(slot_mapping), k_cache.data, v_cache.data, k_cache.dtype,
                           k_cache.shape[0] * k_cache.shape[1]);
}

void rotary_write_kv(const ExecContext& ctx, const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& positions, const TensorView& table_offsets, const TensorView& cos_table,
                     const TensorView& sin_table, int rotary_dim, bool neox_style, const TensorView& slot_mapping,
                     const TensorView& k_cache, const TensorView& v_cache) {
    check_same_dtype("rotary_write_kv", k, "k", v, "v");
    TACO_CHECK_MSG(k_cache.dtype == v_cache.dtype, "rotary_write_kv: k_cache is {} and v_cache is {}",
                   dtype_name(k_cache.dtype), dtype_name(v_cache.dtype));
    const int32_t* offsets = table_offsets.ndim > 0 ? const_data<int32_t>(table_offsets) : nullptr;
    launch::rotary_write_kv(ctx.stream, q.data, k.data, v.data, q.dtype, q.shape[0], q.shape[1], k.shape[1], q.shape[2],
                            const_data<int32_t>(positions), offsets, const_data<float>(cos_table),
                            const_data<float>(sin_table), cos_table.shape[0], rotary_dim, neox_style,
                            const_data<int64_t>(slot_mapping), k_cache.data, v_cache.data, k_cache.dtype,
                            k_cache.shape[0] * k_cache.shape[1]);
}

void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const ops::MoeRouteParams& params, const TensorView& ids, const TensorView& weights) {
    const int64_t* slots = slot_mapping.ndim > 0 ? const_data<int64_t>(slot_mapping) : nullptr;
    const int num_experts = int(logits.shape[1]);
    switch (params.routing) {
        case ops::MoeRouting::kSoftmaxTopK:
            launch::moe_route_softmax_top_k(ctx.stream, const_data<float>(logits), slots, logits.shape[0], num_experts,
                                            params.top_k, params.renormalize, data<int32_t>(ids), data<float>(weights));
            return;
        case ops::MoeRouting::kSparseMixer:
            launch::moe_route_sparse_mixer(ctx.stream, const_data<float>(logits), slots, logits.shape[0], num_experts,
                                           params.sparsemixer_eps, data<int32_t>(ids), data<float>(weights));
            return;
    }
    TACO_CHECK_MSG(false, "moe_route: unknown routing {}", int(params.routing));
}

void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets) {
    launch::moe_align(ctx.stream, const_data<int32_t>(ids), ids.numel(), num_experts, data<int32_t>(sorted_slots),
                      data<int32_t>(slot_rows), data<int32_t>(expert_offsets));
}

void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out) {
    check_same_dtype("moe_gather", x, "x", out, "out");
    launch::moe_gather(ctx.stream, x.data, x.dtype, x.shape[1], const_data<int32_t>(sorted_slots),
                       const_data<int32_t>(expert_offsets), int(expert_offsets.shape[0] - 1), top_k, out.shape[0],
                       out.data);
}

void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y) {
    check_same_dtype("grouped_matmul", x, "x", y, "y");
    launch::grouped_matmul(ctx.stream, x.data, y.data, x.dtype, x.shape[0], w.data, w.dtype, w.shape[0], w.shape[1],
                           w.shape[2], w.strides[0], const_data<int32_t>(expert_offsets));
}

void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out) {
    check_same_dtype("moe_combine", expert_out, "expert_out", out, "out");
    launch::moe_combine(ctx.stream, expert_out.data, out.dtype, expert_out.shape[0], out.shape[1],
                        const_data<int32_t>(slot_rows), const_data<int32_t>(ids), const_data<float>(weights),
                        ids.shape[0], int(ids.shape[1]), out.data);
}

void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate,
                       const TensorView& out) {
    check_same_dtype("add_sigmoid_gated", shared, "shared", out, "out");
    check_same_dtype("add_sigmoid_gated", gate, "gate", out, "out");
    launch::add_sigmoid_gated(ctx.stream, shared.data, gate.data, out.data, out.dtype, out.shape[0], out.shape[1]);
}

}  // namespace taco::cuda
