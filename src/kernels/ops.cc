// The one place ops are checked and dispatched: shapes, dtypes and devices first (a wrong call aborts naming the
// operand), then the backend of ctx.device. In a dry run (workspace sizing) an op stops after its checks.
#include "kernels/ops.h"

#include "core/check.h"
#include "kernels/cpu/cpu_ops.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

namespace taco::ops {
namespace {

bool is_weight_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

// Activations: f32 on the CPU; f32, f16 or bf16 on CUDA.
void check_act(const ExecContext& ctx, const TensorView& t, int ndim, const char* op, const char* what) {
    TACO_CHECK_MSG(t.ndim == ndim, "{}: {} must be {}-d, got {}", op, what, ndim, t.shape_string());
    TACO_CHECK_MSG(t.device == ctx.device, "{}: {} is on the {}, the op runs on the {}", op, what,
                   device_name(t.device), device_name(ctx.device));
    const bool dtype_ok = ctx.device == Device::kCpu ? t.dtype == DType::kF32 : is_weight_dtype(t.dtype);
    TACO_CHECK_MSG(dtype_ok, "{}: {} has dtype {}, not an activation dtype of the {}", op, what, dtype_name(t.dtype),
                   device_name(ctx.device));
    TACO_CHECK_MSG(t.is_contiguous(), "{}: {} {} is not contiguous", op, what, t.shape_string());
}

void check_on(const ExecContext& ctx, const TensorView& t, DType dtype, int ndim, const char* op, const char* what) {
    TACO_CHECK_MSG(t.ndim == ndim && t.dtype == dtype, "{}: {} must be a {}-d {} tensor, got {} {}", op, what, ndim,
                   dtype_name(dtype), t.shape_string(), dtype_name(t.dtype));
    TACO_CHECK_MSG(t.device == ctx.device, "{}: {} is on the {}, the op runs on the {}", op, what,
                   device_name(t.device), device_name(ctx.device));
    TACO_CHECK_MSG(t.is_contiguous(), "{}: {} {} is not contiguous", op, what, t.shape_string());
}

void check_same_shape(const TensorView& a, const TensorView& b, const char* op) {
    bool same = a.ndim == b.ndim;
    for (int d = 0; same && d < a.ndim; ++d) same = a.shape[d] == b.shape[d];
    TACO_CHECK_MSG(same, "{}: shapes {} and {} differ", op, a.shape_string(), b.shape_string());
}

void check_vector(const ExecContext& ctx, const TensorView* v, int64_t size, const char* op, const char* what) {
    if (v == nullptr) return;
    check_on(ctx, *v, DType::kF32, 1, op, what);
    TACO_CHECK_MSG(v->shape[0] == size, "{}: {} has {} elements, expected {}", op, what, v->shape[0], size);
}

// Returns whether the op should run (not a dry run); aborts on a backend this build lacks.
bool runs(const ExecContext& ctx, const char* op) {
    if (ctx.dry_run) return false;
#ifdef TACO_WITH_CUDA
    const bool built = ctx.device == Device::kCpu || ctx.device == Device::kCuda;
#else
    const bool built = ctx.device == Device::kCpu;
#endif
    TACO_CHECK_MSG(built, "{}: no {} implementation in this build", op, device_name(ctx.device));
    return true;
}

// The backend of ctx.device runs the op (runs() has checked this build has it).
#ifdef TACO_WITH_CUDA
#define TACO_DISPATCH(ctx, op, ...) ((ctx).device == Device::kCuda ? cuda::op(__VA_ARGS__) : cpu::op(__VA_ARGS__))
#else
#define TACO_DISPATCH(ctx, op, ...) cpu::op(__VA_ARGS__)
#endif

}  // namespace

namespace {

void check_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
                  const TensorView& y) {
    check_act(ctx, x, 2, "matmul", "x");
    check_act(ctx, y, 2, "matmul", "y");
    TACO_CHECK_MSG(w.ndim == 2 && is_weight_dtype(w.dtype) && w.is_contiguous() && w.device == ctx.device,
                   "matmul: weight must be a contiguous 2-d float tensor on the {}, got {} {}", device_name(ctx.device),
                   w.shape_string(), dtype_name(w.dtype));
    TACO_CHECK_MSG(x.shape[1] == w.shape[1] && y.shape[0] == x.shape[0] && y.shape[1] == w.shape[0],
                   "matmul: x {} . w {}^T -> y {}", x.shape_string(), w.shape_string(), y.shape_string());
    check_vector(ctx, bias, w.shape[0], "matmul", "bias");
}

}  // namespace

void matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView& y) {
    check_matmul(ctx, x, w, bias, y);
    if (runs(ctx, "matmul")) TACO_DISPATCH(ctx, matmul, ctx, x, w, bias, y);
}

void matmuls(const ExecContext& ctx, const TensorView& x, std::span<const Projection> outs) {
    for (const Projection& p : outs) {
        TACO_CHECK_MSG(p.w != nullptr, "matmuls: a projection without a weight");
        check_matmul(ctx, x, *p.w, p.bias, p.y);
    }
    if (!runs(ctx, "matmul")) return;
#ifdef TACO_WITH_CUDA
    if (ctx.device == Device::kCuda) return cuda::matmuls(ctx, x, outs);
#endif
    for (const Projection& p : outs) cpu::matmul(ctx, x, *p.w, p.bias, p.y);
}

void embedding(const ExecContext& ctx, const TensorView& ids, const TensorView& table, const TensorView& out) {
    check_on(ctx, ids, DType::kI32, 1, "embedding", "ids");
    check_act(ctx, out, 2, "embedding", "out");
    TACO_CHECK_MSG(table.ndim == 2 && dtype_is_float(table.dtype) && table.device == ctx.device,
                   "embedding: table must be a 2-d float tensor on the {}", device_name(ctx.device));
    TACO_CHECK_MSG(table.is_contiguous(), "embedding: table {} is not contiguous", table.shape_string());
    TACO_CHECK_MSG(out.shape[0] == ids.shape[0] && out.shape[1] == table.shape[1], "embedding: {} ids of {} into {}",
                   ids.shape[0], table.shape_string(), out.shape_string());
    if (runs(ctx, "embedding")) TACO_DISPATCH(ctx, embedding, ctx, ids, table, out);
}

void gather_rows(const ExecContext& ctx, const TensorView& src, const TensorView& indices, const TensorView& out) {
    check_act(ctx, src, 2, "gather_rows", "src");
    check_act(ctx, out, 2, "gather_rows", "out");
    check_on(ctx, indices, DType::kI32, 1, "gather_rows", "indices");
    TACO_CHECK_MSG(out.shape[0] == indices.shape[0] && out.shape[1] == src.shape[1] && out.dtype == src.dtype,
                   "gather_rows: {} rows of {} into {}", indices.shape[0], src.shape_string(), out.shape_string());
    if (runs(ctx, "gather_rows")) TACO_DISPATCH(ctx, gather_rows, ctx, src, indices, out);
}

void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst) {
    TACO_CHECK_MSG(src.dtype == dst.dtype && src.numel() == dst.numel(), "copy: {} {} into {} {}",
                   dtype_name(src.dtype), src.shape_string(), dtype_name(dst.dtype), dst.shape_string());
    // Contiguous, or both [rows, cols] with contiguous rows of the same shape (a rectangle of a wider matrix).
    const bool rows_contiguous = src.ndim == 2 && dst.ndim == 2 && src.shape == dst.shape && src.strides[1] == 1 &&
                                 dst.strides[1] == 1 && src.strides[0] >= src.shape[1] &&
                                 dst.strides[0] >= dst.shape[1];
    TACO_CHECK_MSG((src.is_contiguous() && dst.is_contiguous()) || rows_contiguous,
                   "copy: operands must be contiguous, or 2-D with contiguous rows of one shape");
    if (ctx.device == Device::kCpu)
        TACO_CHECK_MSG(src.device == Device::kCpu && dst.device == Device::kCpu, "copy: device memory on the cpu");
    if (runs(ctx, "copy")) TACO_DISPATCH(ctx, copy, ctx, src, dst);
}

namespace {

void check_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView& out,
                    const char* op) {
    check_act(ctx, x, 2, op, "x");
    check_act(ctx, out, 2, op, "out");
    check_same_shape(x, out, op);
    check_vector(ctx, &weight, x.shape[1], op, "weight");
}

void check_add(const ExecContext& ctx, const TensorView& x, const TensorView& y, const char* op) {
    check_act(ctx, x, x.ndim, op, "x");
    check_act(ctx, y, y.ndim, op, "y");
    check_same_shape(x, y, op);
    TACO_CHECK_MSG(x.dtype == y.dtype, "{}: {} += {}", op, dtype_name(x.dtype), dtype_name(y.dtype));
}

}  // namespace

void rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, float eps, float weight_offset,
              const TensorView& out) {
    check_rms_norm(ctx, x, weight, out, "rms_norm");
    if (runs(ctx, "rms_norm")) TACO_DISPATCH(ctx, rms_norm, ctx, x, weight, eps, weight_offset, out);
}

void add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& y, const TensorView& weight, float eps,
                  float weight_offset, const TensorView& out) {
    check_add(ctx, x, y, "add_rms_norm");
    check_rms_norm(ctx, x, weight, out, "add_rms_norm");
    TACO_CHECK_MSG(out.data == nullptr || (out.data != x.data && out.data != y.data),  // (null: a dry run's views)
                   "add_rms_norm: out aliases x or y");
    if (!runs(ctx, "add_rms_norm")) return;
#ifdef TACO_WITH_CUDA
    if (ctx.device == Device::kCuda) return cuda::add_rms_norm(ctx, x, y, weight, eps, weight_offset, out);
#endif
    cpu::add_inplace(ctx, x, y);
    cpu::rms_norm(ctx, x, weight, eps, weight_offset, out);
}

void layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                float eps, const TensorView& out) {
    check_act(ctx, x, 2, "layer_norm", "x");
    check_act(ctx, out, 2, "layer_norm", "out");
    check_same_shape(x, out, "layer_norm");
    check_vector(ctx, &weight, x.shape[1], "layer_norm", "weight");
    check_vector(ctx, bias, x.shape[1], "layer_norm", "bias");
    if (runs(ctx, "layer_norm")) TACO_DISPATCH(ctx, layer_norm, ctx, x, weight, bias, eps, out);
}

void per_head_layer_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, const TensorView* bias,
                         float eps) {
    check_act(ctx, x, 3, "per_head_layer_norm", "x");
    check_on(ctx, weight, DType::kF32, 2, "per_head_layer_norm", "weight");
    TACO_CHECK_MSG(weight.shape[0] == x.shape[1] && weight.shape[1] == x.shape[2],
                   "per_head_layer_norm: weight {} for x {}", weight.shape_string(), x.shape_string());
    if (bias != nullptr) {
        check_on(ctx, *bias, DType::kF32, 2, "per_head_layer_norm", "bias");
        check_same_shape(weight, *bias, "per_head_layer_norm");
    }
    if (runs(ctx, "per_head_layer_norm")) TACO_DISPATCH(ctx, per_head_layer_norm, ctx, x, weight, bias, eps);
}

void add_inplace(const ExecContext& ctx, const TensorView& x, const TensorView& y) {
    check_add(ctx, x, y, "add_inplace");
    if (runs(ctx, "add_inplace")) TACO_DISPATCH(ctx, add_inplace, ctx, x, y);
}

void scale_inplace(const ExecContext& ctx, const TensorView& x, float s) {
    check_act(ctx, x, x.ndim, "scale_inplace", "x");
    if (runs(ctx, "scale_inplace")) TACO_DISPATCH(ctx, scale_inplace, ctx, x, s);
}

void softcap_inplace(const ExecContext& ctx, const TensorView& x, float cap) {
    TACO_CHECK_MSG(cap > 0, "softcap_inplace: cap {} must be positive", cap);
    TACO_CHECK_MSG(x.dtype == DType::kF32 && x.device == ctx.device && x.is_contiguous(),
                   "softcap_inplace: x must be contiguous f32 on the {}", device_name(ctx.device));
    if (runs(ctx, "softcap_inplace")) TACO_DISPATCH(ctx, softcap_inplace, ctx, x, cap);
}

void gated_activation(const ExecContext& ctx, const TensorView& gate, const TensorView& up, Activation act,
                      const TensorView& out) {
    check_act(ctx, gate, 2, "gated_activation", "gate");
    check_act(ctx, up, 2, "gated_activation", "up");
    check_act(ctx, out, 2, "gated_activation", "out");
    check_same_shape(gate, up, "gated_activation");
    check_same_shape(gate, out, "gated_activation");
    if (runs(ctx, "gated_activation")) TACO_DISPATCH(ctx, gated_activation, ctx, gate, up, act, out);
}

void gated_projection(const ExecContext& ctx, const TensorView& x, const Projection& gate, const Projection& up,
                      Activation act, const TensorView& out) {
    TACO_CHECK_MSG(gate.w != nullptr && up.w != nullptr, "gated_projection: a projection without a weight");
    check_matmul(ctx, x, *gate.w, gate.bias, gate.y);
    check_matmul(ctx, x, *up.w, up.bias, up.y);
    check_act(ctx, gate.y, 2, "gated_projection", "gate");
    check_act(ctx, up.y, 2, "gated_projection", "up");
    check_act(ctx, out, 2, "gated_projection", "out");
    check_same_shape(gate.y, up.y, "gated_projection");
    check_same_shape(gate.y, out, "gated_projection");
    // One dtype for gate, up and out, as gated_activation takes them on every backend: a fusing backend never
    // accepts what the separate ops would refuse.
    TACO_CHECK_MSG(gate.y.dtype == out.dtype && up.y.dtype == out.dtype,
                   "gated_projection: gate is {}, up is {} and out is {}; they take one dtype",
                   dtype_name(gate.y.dtype), dtype_name(up.y.dtype), dtype_name(out.dtype));
    if (!runs(ctx, "gated_projection")) return;
#ifdef TACO_WITH_CUDA
    if (ctx.device == Device::kCuda) return cuda::gated_projection(ctx, x, gate, up, act, out);
#endif
    const Projection both[] = {gate, up};
    for (const Projection& p : both) cpu::matmul(ctx, x, *p.w, p.bias, p.y);
    cpu::gated_activation(ctx, gate.y, up.y, act, out);
}

void activation_inplace(const ExecContext& ctx, const TensorView& x, Activation act) {
    check_act(ctx, x, x.ndim, "activation_inplace", "x");
    if (runs(ctx, "activation_inplace")) TACO_DISPATCH(ctx, activation_inplace, ctx, x, act);
}

namespace {

void check_rotary(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                  const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                  int rotary_dim, const char* op) {
    check_act(ctx, x, 3, op, "x");
    check_on(ctx, positions, DType::kI32, 1, op, "positions");
    TACO_CHECK_MSG(positions.shape[0] == x.shape[0], "{}: {} positions for x {}", op, positions.shape[0],
                   x.shape_string());
    if (table_offsets.ndim > 0) {
        check_on(ctx, table_offsets, DType::kI32, 1, op, "table_offsets");
        TACO_CHECK_EQ(table_offsets.shape[0], x.shape[0]);
    }
    TACO_CHECK_MSG(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= x.shape[2],
                   "{}: rotary_dim {} for head_dim {}", op, rotary_dim, x.shape[2]);
    check_on(ctx, cos_table, DType::kF32, 2, op, "cos_table");
    check_on(ctx, sin_table, DType::kF32, 2, op, "sin_table");
    check_same_shape(cos_table, sin_table, op);
    TACO_CHECK_EQ(cos_table.shape[1], int64_t(rotary_dim / 2));
}

void check_write_kv(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache, const char* op) {
    check_act(ctx, k, 3, op, "k");
    check_act(ctx, v, 3, op, "v");
    check_same_shape(k, v, op);
    check_on(ctx, slot_mapping, DType::kI64, 1, op, "slot_mapping");
    TACO_CHECK_EQ(slot_mapping.shape[0], k.shape[0]);
    check_act(ctx, k_cache, 4, op, "k_cache");
    check_act(ctx, v_cache, 4, op, "v_cache");
    check_same_shape(k_cache, v_cache, op);
    TACO_CHECK_MSG(k.shape[1] == k_cache.shape[2] && k.shape[2] == k_cache.shape[3], "{}: k {} for a cache {}", op,
                   k.shape_string(), k_cache.shape_string());
}

}  // namespace

void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style) {
    check_rotary(ctx, x, positions, table_offsets, cos_table, sin_table, rotary_dim, "rotary_embedding");
    if (runs(ctx, "rotary_embedding"))
        TACO_DISPATCH(ctx, rotary_embedding, ctx, x, positions, table_offsets, cos_table, sin_table, rotary_dim,
                      neox_style);
}

void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache) {
    check_write_kv(ctx, k, v, slot_mapping, k_cache, v_cache, "write_kv_cache");
    if (runs(ctx, "write_kv_cache")) TACO_DISPATCH(ctx, write_kv_cache, ctx, k, v, slot_mapping, k_cache, v_cache);
}

void rotary_write_kv(const ExecContext& ctx, const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& positions, const TensorView& table_offsets, const TensorView& cos_table,
                     const TensorView& sin_table, int rotary_dim, bool neox_style, const TensorView& slot_mapping,
                     const TensorView& k_cache, const TensorView& v_cache) {
    const char* op = "rotary_write_kv";
    check_rotary(ctx, q, positions, table_offsets, cos_table, sin_table, rotary_dim, op);
    check_rotary(ctx, k, positions, table_offsets, cos_table, sin_table, rotary_dim, op);
    check_write_kv(ctx, k, v, slot_mapping, k_cache, v_cache, op);
    TACO_CHECK_MSG(q.shape[2] == k.shape[2] && q.dtype == k.dtype, "{}: q {} {} with k {} {}", op, dtype_name(q.dtype),
                   q.shape_string(), dtype_name(k.dtype), k.shape_string());
    if (!runs(ctx, op)) return;
#ifdef TACO_WITH_CUDA
    if (ctx.device == Device::kCuda)
        return cuda::rotary_write_kv(ctx, q, k, v, positions, table_offsets, cos_table, sin_table, rotary_dim,
                                     neox_style, slot_mapping, k_cache, v_cache);
#endif
    cpu::rotary_embedding(ctx, q, positions, table_offsets, cos_table, sin_table, rotary_dim, neox_style);
    cpu::rotary_embedding(ctx, k, positions, table_offsets, cos_table, sin_table, rotary_dim, neox_style);
    cpu::write_kv_cache(ctx, k, v, slot_mapping, k_cache, v_cache);
}

void paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionMetadata& batch, const AttentionParams& params, const TensorView& out) {
    check_act(ctx, q, 3, "paged_attention", "q");
    check_act(ctx, out, 3, "paged_attention", "out");
    check_same_shape(q, out, "paged_attention");
    check_act(ctx, k_cache, 4, "paged_attention", "k_cache");
    check_act(ctx, v_cache, 4, "paged_attention", "v_cache");
    check_same_shape(k_cache, v_cache, "paged_attention");
    TACO_CHECK_EQ(k_cache.shape[3], q.shape[2]);
    TACO_CHECK_MSG(q.shape[1] % k_cache.shape[2] == 0, "paged_attention: {} heads over {} kv heads", q.shape[1],
                   k_cache.shape[2]);
    check_on(ctx, batch.query_start, DType::kI32, 1, "paged_attention", "query_start");
    check_on(ctx, batch.seq_lens, DType::kI32, 1, "paged_attention", "seq_lens");
    check_on(ctx, batch.positions, DType::kI32, 1, "paged_attention", "positions");
    check_on(ctx, batch.block_tables, DType::kI32, 2, "paged_attention", "block_tables");
    const int64_t num_seqs = batch.seq_lens.shape[0];
    TACO_CHECK_EQ(batch.query_start.shape[0], num_seqs + 1);
    TACO_CHECK_EQ(batch.block_tables.shape[0], num_seqs);
    TACO_CHECK_EQ(batch.positions.shape[0], q.shape[0]);
    if (params.alibi_slopes.ndim > 0) check_vector(ctx, &params.alibi_slopes, q.shape[1], "paged_attention", "alibi");
#ifdef TACO_WITH_CUDA
    if (ctx.device == Device::kCuda) {
        // Split-KV partials come from ctx.scratch, taken before the dry-run check so that workspace sizing reserves
        // them, and handed back once the kernels are queued (later ops on the stream run after them).
        TensorView partials;
        const size_t mark = ctx.scratch != nullptr ? ctx.scratch->mark() : 0;
        if (ctx.scratch != nullptr) {
            const size_t bytes =
                cuda::paged_attention_scratch_bytes(q.shape[0], q.shape[1], q.shape[2], batch.max_seq_len);
            partials = ctx.scratch->alloc({int64_t(bytes)}, DType::kU8);
        }
        if (runs(ctx, "paged_attention")) cuda::paged_attention(ctx, q, k_cache, v_cache, batch, params, partials, out);
        if (ctx.scratch != nullptr) ctx.scratch->release_to(mark);
        return;
    }
#endif
    if (runs(ctx, "paged_attention")) cpu::paged_attention(ctx, q, k_cache, v_cache, batch, params, out);
}

void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const MoeRouteParams& params, const TensorView& ids, const TensorView& weights) {
    check_on(ctx, logits, DType::kF32, 2, "moe_route", "logits");
    check_on(ctx, ids, DType::kI32, 2, "moe_route", "ids");
    check_on(ctx, weights, DType::kF32, 2, "moe_route", "weights");
    check_same_shape(ids, weights, "moe_route");
    TACO_CHECK_MSG(ids.shape[0] == logits.shape[0] && ids.shape[1] == params.top_k && params.top_k >= 1 &&
                       params.top_k <= logits.shape[1],
                   "moe_route: top {} of {} logits into {}", params.top_k, logits.shape_string(), ids.shape_string());
    TACO_CHECK_MSG(params.routing != MoeRouting::kSparseMixer || params.top_k == 2, "moe_route: sparsemixer is top-2");
    if (slot_mapping.ndim > 0) {
        check_on(ctx, slot_mapping, DType::kI64, 1, "moe_route", "slot_mapping");
        TACO_CHECK_EQ(slot_mapping.shape[0], logits.shape[0]);
    }
    if (runs(ctx, "moe_route")) TACO_DISPATCH(ctx, moe_route, ctx, logits, slot_mapping, params, ids, weights);
}

void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets) {
    check_on(ctx, ids, DType::kI32, 2, "moe_align", "ids");
    check_on(ctx, sorted_slots, DType::kI32, 1, "moe_align", "sorted_slots");
    check_on(ctx, slot_rows, DType::kI32, 1, "moe_align", "slot_rows");
    check_on(ctx, expert_offsets, DType::kI32, 1, "moe_align", "expert_offsets");
    TACO_CHECK_EQ(sorted_slots.shape[0], ids.numel());
    TACO_CHECK_EQ(slot_rows.shape[0], ids.numel());
    TACO_CHECK_EQ(expert_offsets.shape[0], int64_t(num_experts) + 1);
    if (runs(ctx, "moe_align"))
        TACO_DISPATCH(ctx, moe_align, ctx, ids, num_experts, sorted_slots, slot_rows, expert_offsets);
}

void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out) {
    check_act(ctx, x, 2, "moe_gather", "x");
    check_act(ctx, out, 2, "moe_gather", "out");
    check_on(ctx, sorted_slots, DType::kI32, 1, "moe_gather", "sorted_slots");
    check_on(ctx, expert_offsets, DType::kI32, 1, "moe_gather", "expert_offsets");
    TACO_CHECK_MSG(
        out.shape[0] == x.shape[0] * top_k && out.shape[1] == x.shape[1] && sorted_slots.shape[0] == out.shape[0],
        "moe_gather: {} x top {} into {}", x.shape_string(), top_k, out.shape_string());
    if (runs(ctx, "moe_gather")) TACO_DISPATCH(ctx, moe_gather, ctx, x, sorted_slots, expert_offsets, top_k, out);
}

void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y) {
    check_act(ctx, x, 2, "grouped_matmul", "x");
    check_act(ctx, y, 2, "grouped_matmul", "y");
    TACO_CHECK_MSG(w.ndim == 3 && is_weight_dtype(w.dtype) && w.device == ctx.device && w.strides[2] == 1 &&
                       w.strides[1] == w.shape[2],
                   "grouped_matmul: weight must be [E, N, K] float with contiguous expert rows, got {} {}",
                   w.shape_string(), dtype_name(w.dtype));
    check_on(ctx, expert_offsets, DType::kI32, 1, "grouped_matmul", "expert_offsets");
    TACO_CHECK_EQ(expert_offsets.shape[0], w.shape[0] + 1);
    TACO_CHECK_MSG(x.shape[1] == w.shape[2] && y.shape[0] == x.shape[0] && y.shape[1] == w.shape[1],
                   "grouped_matmul: x {} . w {} -> y {}", x.shape_string(), w.shape_string(), y.shape_string());
    if (runs(ctx, "grouped_matmul")) TACO_DISPATCH(ctx, grouped_matmul, ctx, x, w, expert_offsets, y);
}

void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out) {
    check_act(ctx, expert_out, 2, "moe_combine", "expert_out");
    check_act(ctx, out, 2, "moe_combine", "out");
    check_on(ctx, slot_rows, DType::kI32, 1, "moe_combine", "slot_rows");
    check_on(ctx, ids, DType::kI32, 2, "moe_combine", "ids");
    check_on(ctx, weights, DType::kF32, 2, "moe_combine", "weights");
    TACO_CHECK_MSG(ids.shape[0] == out.shape[0] && expert_out.shape[0] == ids.numel() &&
                       slot_rows.shape[0] == ids.numel() && expert_out.shape[1] == out.shape[1],
                   "moe_combine: {} expert rows, ids {} into {}", expert_out.shape_string(), ids.shape_string(),
                   out.shape_string());
    if (runs(ctx, "moe_combine")) TACO_DISPATCH(ctx, moe_combine, ctx, expert_out, slot_rows, ids, weights, out);
}

void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate,
                       const TensorView& out) {
    check_act(ctx, shared, 2, "add_sigmoid_gated", "shared");
    check_act(ctx, gate, 2, "add_sigmoid_gated", "gate");
    check_act(ctx, out, 2, "add_sigmoid_gated", "out");
    check_same_shape(shared, out, "add_sigmoid_gated");
    TACO_CHECK_MSG(gate.shape[0] == out.shape[0] && gate.shape[1] == 1, "add_sigmoid_gated: gate {}",
                   gate.shape_string());
    if (runs(ctx, "add_sigmoid_gated")) TACO_DISPATCH(ctx, add_sigmoid_gated, ctx, shared, gate, out);
}

}  // namespace taco::ops
