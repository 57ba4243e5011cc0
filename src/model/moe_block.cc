#include "model/moe_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "model/moe_routing.h"
#include "model/weight_placer.h"

namespace taco {
namespace {

std::string substitute(std::string pattern, const std::string& key, int64_t value) {
    for (auto at = pattern.find(key); at != std::string::npos; at = pattern.find(key))
        pattern.replace(at, key.size(), std::to_string(value));
    return pattern;
}

bool is_weight_dtype(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

// Copies per-expert [rows, cols] matrices into expert e's slot of a [E, rows_per_expert, cols] stack, starting
// `row_offset` rows in.
Status copy_into_stack(const TensorView& m, const Tensor& stack, int64_t e, int64_t row_offset,
                       const std::string& name) {
    if (m.dtype != stack.view().dtype)
        return error("tensor '{}' has dtype {}, the other experts {}", name, dtype_name(m.dtype),
                     dtype_name(stack.view().dtype));
    const TensorView s = stack.view();
    const size_t elem = dtype_size_bytes(s.dtype);
    auto* dst = static_cast<uint8_t*>(s.data) + size_t((e * s.shape[1] + row_offset) * s.shape[2]) * elem;
    std::memcpy(dst, m.data, m.nbytes());
    return Status::ok();
}

// [E, rows, cols] view of rows [begin, begin + rows) of every expert of a [E, total_rows, cols] stack.
TensorView expert_rows(const TensorView& stack, int64_t begin, int64_t rows) {
    return stack.slice(1, begin, begin + rows);
}

Result<TensorView> stacked(const MoeWeightSource& source, const std::string& name, int64_t count, int64_t rows,
                           int64_t cols) {
    TACO_ASSIGN_OR_RETURN(TensorView t, source.tensor(name));
    if (t.ndim != 3 || t.shape[0] != count || t.shape[1] != rows || t.shape[2] != cols)
        return error("tensor '{}' has shape {}, expected [{}, {}, {}]", name, t.shape_string(), count, rows, cols);
    if (!is_weight_dtype(t.dtype) || !t.is_contiguous())
        return error("tensor '{}' must be a contiguous F32, F16 or BF16 tensor, got {}", name, dtype_name(t.dtype));
    return t;
}

}  // namespace

Result<MoeBlock> MoeBlock::bind(const MoeSpec& spec, int64_t layer, int64_t hidden_size, ops::Activation activation,
                                const MoeWeightSource& source) {
    const MoeNames& n = spec.names;
    MoeBlock block;
    block.spec_ = spec;
    block.hidden_size_ = hidden_size;
    block.activation_ = activation;
    const int64_t num_experts = spec.num_experts, inter = spec.intermediate_size;

    std::string prefix, router;
    std::string looked_for;
    for (const auto& prefix_pattern : n.block_prefixes) {
        for (const auto& router_name : n.routers) {
            std::string candidate = substitute(prefix_pattern, "{}", layer) + "." + router_name + ".weight";
            looked_for += (looked_for.empty() ? "'" : ", '") + candidate + "'";
            if (prefix.empty() && source.contains(candidate)) {
                prefix = substitute(prefix_pattern, "{}", layer);
                router = candidate;
            }
        }
    }
    if (prefix.empty()) return error("layer {}: no MoE router tensor (looked for {})", layer, looked_for);
    TACO_ASSIGN_OR_RETURN(block.router_, source.matrix(router, num_experts, hidden_size));

    auto expert_tensor = [&](const std::string& pattern, int64_t e) {
        return prefix + "." + substitute(pattern, "{e}", e) + ".weight";
    };
    const std::string stacked_gate_up = prefix + "." + n.stacked_gate_up;
    TensorView gate_up, down;
    if (source.contains(expert_tensor(n.expert_gate, 0))) {
        for (int64_t e = 0; e < num_experts; ++e) {
            TACO_ASSIGN_OR_RETURN(TensorView g, source.matrix(expert_tensor(n.expert_gate, e), inter, hidden_size));
            TACO_ASSIGN_OR_RETURN(TensorView u, source.matrix(expert_tensor(n.expert_up, e), inter, hidden_size));
            TACO_ASSIGN_OR_RETURN(TensorView d, source.matrix(expert_tensor(n.expert_down, e), hidden_size, inter));
            if (e == 0) {
                block.gate_up_storage_ = Tensor::empty({num_experts, 2 * inter, hidden_size}, g.dtype);
                block.down_storage_ = Tensor::empty({num_experts, hidden_size, inter}, d.dtype);
            }
            TACO_RETURN_IF_ERROR(copy_into_stack(g, block.gate_up_storage_, e, 0, expert_tensor(n.expert_gate, e)));
            TACO_RETURN_IF_ERROR(copy_into_stack(u, block.gate_up_storage_, e, inter, expert_tensor(n.expert_up, e)));
            TACO_RETURN_IF_ERROR(copy_into_stack(d, block.down_storage_, e, 0, expert_tensor(n.expert_down, e)));
        }
        gate_up = block.gate_up_storage_.view();
        down = block.down_storage_.view();
    } else if (source.contains(stacked_gate_up)) {
        TACO_ASSIGN_OR_RETURN(gate_up, stacked(source, stacked_gate_up, num_experts, 2 * inter, hidden_size));
        TACO_ASSIGN_OR_RETURN(down, stacked(source, prefix + "." + n.stacked_down, num_experts, hidden_size, inter));
    } else {
        return error("layer {}: no expert weights (looked for '{}' and '{}')", layer, expert_tensor(n.expert_gate, 0),
                     stacked_gate_up);
    }
    block.gate_ = expert_rows(gate_up, 0, inter);
    block.up_ = expert_rows(gate_up, inter, inter);
    block.down_ = down;

    if (spec.shared_intermediate_size > 0) {
        const int64_t shared = spec.shared_intermediate_size;
        block.has_shared_ = true;
        TACO_ASSIGN_OR_RETURN(block.shared_.gate,
                              source.matrix(prefix + "." + n.shared_gate + ".weight", shared, hidden_size));
        TACO_ASSIGN_OR_RETURN(block.shared_.up,
                              source.matrix(prefix + "." + n.shared_up + ".weight", shared, hidden_size));
        TACO_ASSIGN_OR_RETURN(block.shared_.down,
                              source.matrix(prefix + "." + n.shared_down + ".weight", hidden_size, shared));
        TACO_ASSIGN_OR_RETURN(block.shared_gate_,
                              source.matrix(prefix + "." + n.shared_expert_gate + ".weight", 1, hidden_size));
    }
    return block;
}

size_t MoeBlock::matrix_elements() const {
    size_t n = size_t(router_.numel() + 2 * gate_.numel() + down_.numel());
    if (has_shared_)
        n += size_t(shared_.gate.numel() + shared_.up.numel() + shared_.down.numel() + shared_gate_.numel());
    return n;
}

void MoeBlock::place(WeightPlacer& placer) {
    const int64_t experts = gate_.shape[0], inter = gate_.shape[1], hidden = gate_.shape[2];
    // gate_ and up_ are the two row halves of one [E, 2 * inter, hidden] stack (bind): place the stack.
    const TensorView gate_up = placer.matrix(TensorView(gate_.data, gate_.dtype, {experts, 2 * inter, hidden}));
    gate_ = expert_rows(gate_up, 0, inter);
    up_ = expert_rows(gate_up, inter, inter);
    down_ = placer.matrix(down_);
    router_ = placer.matrix(router_);
    if (has_shared_) {
        shared_.gate = placer.matrix(shared_.gate);
        shared_.up = placer.matrix(shared_.up);
        shared_.down = placer.matrix(shared_.down);
        shared_gate_ = placer.matrix(shared_gate_);
    }
    // The host stacks made at bind time are read only by the copies above.
    if (gate_up_storage_.defined() && gate_up_storage_.view().data != gate_up.data) gate_up_storage_ = Tensor();
    if (down_storage_.defined() && down_storage_.view().data != down_.data) down_storage_ = Tensor();
}

void MoeBlock::forward(const ExecContext& ctx, Workspace& ws, const TensorView& x, const TensorView& slot_mapping,
                       const TensorView& out) const {
    TACO_CHECK(x.ndim == 2 && x.shape[1] == hidden_size_);
    const int64_t num_tokens = x.shape[0], hidden = hidden_size_, k = spec_.top_k, slots = num_tokens * k;
    const int64_t num_experts = spec_.num_experts, inter = spec_.intermediate_size;
    const size_t mark = ws.mark();

    TensorView logits = ws.alloc({num_tokens, num_experts}, DType::kF32);
    ops::matmul(ctx, x, router_, nullptr, logits);
    TensorView ids = ws.alloc({num_tokens, k}, DType::kI32);
    TensorView weights = ws.alloc({num_tokens, k}, DType::kF32);
    ops::MoeRouteParams route;
    route.routing = spec_.routing;
    route.top_k = int(k);
    route.renormalize = spec_.renormalize;
    route.sparsemixer_eps = spec_.sparsemixer_eps;
    ops::moe_route(ctx, logits, slot_mapping, route, ids, weights);

    TensorView sorted = ws.alloc({slots}, DType::kI32);
    TensorView slot_rows = ws.alloc({slots}, DType::kI32);
    TensorView offsets = ws.alloc({num_experts + 1}, DType::kI32);
    ops::moe_align(ctx, ids, int(num_experts), sorted, slot_rows, offsets);

    // Grouped GEMM over the rows in expert order: every row is computed on its own, so grouping changes no bit.
    TensorView rows = ws.alloc({slots, hidden}, x.dtype);
    ops::moe_gather(ctx, x, sorted, offsets, int(k), rows);
    TensorView gate = ws.alloc({slots, inter}, x.dtype);
    TensorView up = ws.alloc({slots, inter}, x.dtype);
    ops::grouped_matmul(ctx, rows, gate_, offsets, gate);
    ops::grouped_matmul(ctx, rows, up_, offsets, up);
    ops::gated_activation(ctx, gate, up, activation_, gate);
    TensorView expert_out = ws.alloc({slots, hidden}, x.dtype);
    ops::grouped_matmul(ctx, gate, down_, offsets, expert_out);
    ops::moe_combine(ctx, expert_out, slot_rows, ids, weights, out);

    if (has_shared_) {
        const int64_t shared_inter = spec_.shared_intermediate_size;
        TensorView sg = ws.alloc({num_tokens, shared_inter}, x.dtype);
        TensorView su = ws.alloc({num_tokens, shared_inter}, x.dtype);
        ops::matmul(ctx, x, shared_.gate, nullptr, sg);
        ops::matmul(ctx, x, shared_.up, nullptr, su);
        ops::gated_activation(ctx, sg, su, activation_, sg);
        TensorView shared = ws.alloc({num_tokens, hidden}, x.dtype);
        ops::matmul(ctx, sg, shared_.down, nullptr, shared);
        TensorView shared_gate = ws.alloc({num_tokens, 1}, x.dtype);
        ops::matmul(ctx, x, shared_gate_, nullptr, shared_gate);
        ops::add_sigmoid_gated(ctx, shared, shared_gate, out);
    }
    ws.release_to(mark);
}

}  // namespace taco
