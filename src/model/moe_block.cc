#include "model/moe_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "model/moe_routing.h"

namespace taco {
namespace {

std::string substitute(std::string pattern, const std::string& key, int64_t value) {
    for (auto at = pattern.find(key); at != std::string::npos; at = pattern.find(key))
        pattern.replace(at, key.size(), std::to_string(value));
    return pattern;
}

bool is_weight_dtype(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

// Matrix `index` of a contiguous [count, rows, cols] stack, starting `row_offset` rows into it, as a [rows, cols]
// view.
TensorView stacked_matrix(const TensorView& stack, int64_t index, int64_t row_offset, int64_t rows) {
    const int64_t cols = stack.shape[2];
    const int64_t first = (index * stack.shape[1] + row_offset) * cols;
    auto* data = static_cast<uint8_t*>(stack.data) + size_t(first) * dtype_size_bytes(stack.dtype);
    return TensorView(data, stack.dtype, {rows, cols}, stack.device);
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
    block.experts_.resize(size_t(num_experts));
    const std::string stacked_gate_up = prefix + "." + n.stacked_gate_up;
    if (source.contains(expert_tensor(n.expert_gate, 0))) {
        for (int64_t e = 0; e < num_experts; ++e) {
            Expert& x = block.experts_[size_t(e)];
            TACO_ASSIGN_OR_RETURN(x.gate, source.matrix(expert_tensor(n.expert_gate, e), inter, hidden_size));
            TACO_ASSIGN_OR_RETURN(x.up, source.matrix(expert_tensor(n.expert_up, e), inter, hidden_size));
            TACO_ASSIGN_OR_RETURN(x.down, source.matrix(expert_tensor(n.expert_down, e), hidden_size, inter));
        }
    } else if (source.contains(stacked_gate_up)) {
        TACO_ASSIGN_OR_RETURN(TensorView gate_up,
                              stacked(source, stacked_gate_up, num_experts, 2 * inter, hidden_size));
        TACO_ASSIGN_OR_RETURN(TensorView down,
                              stacked(source, prefix + "." + n.stacked_down, num_experts, hidden_size, inter));
        for (int64_t e = 0; e < num_experts; ++e) {
            Expert& x = block.experts_[size_t(e)];
            x.gate = stacked_matrix(gate_up, e, 0, inter);
            x.up = stacked_matrix(gate_up, e, inter, inter);
            x.down = stacked_matrix(down, e, 0, hidden_size);
        }
    } else {
        return error("layer {}: no expert weights (looked for '{}' and '{}')", layer, expert_tensor(n.expert_gate, 0),
                     stacked_gate_up);
    }

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

void MoeBlock::run_mlp(const Expert& expert, int64_t intermediate, const TensorView& x, const TensorView& out) const {
    const int64_t rows = x.shape[0];
    Tensor gate = Tensor::empty({rows, intermediate}, DType::kF32);
    Tensor up = Tensor::empty({rows, intermediate}, DType::kF32);
    ops::matmul(x, expert.gate, nullptr, gate);
    ops::matmul(x, expert.up, nullptr, up);
    ops::gated_activation(gate, up, activation_, gate);
    ops::matmul(gate, expert.down, nullptr, out);
}

void MoeBlock::forward(const TensorView& x, const TensorView& out) const {
    TACO_CHECK(x.ndim == 2 && x.shape[1] == hidden_size_ && x.dtype == DType::kF32 && x.is_contiguous());
    TACO_CHECK(out.ndim == 2 && out.shape[0] == x.shape[0] && out.shape[1] == hidden_size_ && out.is_contiguous());
    const int64_t num_tokens = x.shape[0], hidden = hidden_size_, k = spec_.top_k;
    const size_t row_bytes = size_t(hidden) * sizeof(float);

    Tensor logits = Tensor::empty({num_tokens, spec_.num_experts}, DType::kF32);
    ops::matmul(x, router_, nullptr, logits);
    const std::vector<ExpertChoice> choices = route_tokens(logits, spec_);

    // Grouped GEMM: the (token, rank) slots of each expert, in token order, run as one matmul per expert.
    std::vector<std::vector<int64_t>> slots_of(experts_.size());
    for (size_t slot = 0; slot < choices.size(); ++slot)
        slots_of[size_t(choices[slot].expert)].push_back(int64_t(slot));
    Tensor expert_out = Tensor::empty({num_tokens * k, hidden}, DType::kF32);  // row t * k + r: unweighted output
    for (size_t e = 0; e < experts_.size(); ++e) {
        const auto& slots = slots_of[e];
        if (slots.empty()) continue;
        const int64_t rows = int64_t(slots.size());
        Tensor gathered = Tensor::empty({rows, hidden}, DType::kF32);
        Tensor result = Tensor::empty({rows, hidden}, DType::kF32);
        for (int64_t i = 0; i < rows; ++i)
            std::memcpy(gathered.view().row<float>(i), x.row<float>(slots[size_t(i)] / k), row_bytes);
        run_mlp(experts_[e], spec_.intermediate_size, gathered, result);
        for (int64_t i = 0; i < rows; ++i)
            std::memcpy(expert_out.view().row<float>(slots[size_t(i)]), result.view().row<float>(i), row_bytes);
    }

    // Each token's sum in ascending expert id: independent of the batch's grouping.
    std::vector<int64_t> ranks(static_cast<size_t>(k));
    for (int64_t t = 0; t < num_tokens; ++t) {
        const ExpertChoice* mine = choices.data() + t * k;
        for (int64_t r = 0; r < k; ++r) ranks[size_t(r)] = r;
        std::sort(ranks.begin(), ranks.end(), [&](int64_t a, int64_t b) { return mine[a].expert < mine[b].expert; });
        float* o = out.row<float>(t);
        std::fill(o, o + hidden, 0.0f);
        for (int64_t r : ranks) {
            const float w = mine[r].weight;
            const float* y = expert_out.view().row<float>(t * k + r);
            for (int64_t h = 0; h < hidden; ++h) {
                const float weighted = w * y[h];
                o[h] += weighted;
            }
        }
    }

    if (has_shared_) {
        Tensor shared = Tensor::empty({num_tokens, hidden}, DType::kF32);
        Tensor gate = Tensor::empty({num_tokens, 1}, DType::kF32);
        run_mlp(shared_, spec_.shared_intermediate_size, x, shared);
        ops::matmul(x, shared_gate_, nullptr, gate);
        for (int64_t t = 0; t < num_tokens; ++t) {
            const float scale = 1.0f / (1.0f + std::exp(-gate.as<float>()[t]));
            const float* s = shared.view().row<float>(t);
            float* o = out.row<float>(t);
            for (int64_t h = 0; h < hidden; ++h) {
                const float scaled = scale * s[h];
                o[h] += scaled;
            }
        }
    }
}

}  // namespace taco
