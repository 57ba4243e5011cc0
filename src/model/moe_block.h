// MoeBlock: the mixture-of-experts MLP of one sparse decoder layer, as ops with no host reads: route every token
// (ops::moe_route), sort the (token, rank) slots by expert (ops::moe_align), gather the rows in expert order, run
// gate/up/down as grouped GEMMs over the stacked expert weights, then sum each token's experts in ascending expert
// id (the order transformers adds them in, ops::moe_combine), plus the shared expert scaled by sigmoid(shared
// gate) when the family has one. Padding tokens (slot -1) route nowhere.
//
// Batch invariance: a token's routing reads its own logits only; ops::matmul computes each output row on its own
// in a fixed order; the sum over a token's experts has a fixed order. So a token's output does not depend on which
// other tokens share the batch or on how they were grouped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "kernels/ops.h"
#include "model/moe_spec.h"

namespace taco {

class WeightPlacer;

// How a MoeBlock reads checkpoint tensors; the decoder's WeightBinder provides these, so every tensor handed out
// counts as used.
struct MoeWeightSource {
    std::function<bool(const std::string&)> contains;
    // A 2-d [rows, cols] float matrix, or an error naming the tensor.
    std::function<Result<TensorView>(const std::string&, int64_t, int64_t)> matrix;
    // Any tensor as stored (the stacked expert layout is 3-d); the caller checks its shape.
    std::function<Result<TensorView>(const std::string&)> tensor;
};

class MoeBlock {
public:
    // Binds layer `layer`'s router, experts and shared expert as `spec` names them.
    static Result<MoeBlock> bind(const MoeSpec& spec, int64_t layer, int64_t hidden_size, ops::Activation activation,
                                 const MoeWeightSource& source);

    // Elements of every matrix (router, experts, shared expert): what place() moves.
    size_t matrix_elements() const;
    // Moves the matrices where `placer` serves weights (model/weight_placer.h), keeping the stacked layout.
    void place(WeightPlacer& placer);

    // x, out: [T, hidden] act; slot_mapping: [T] i64 (padding rows are < 0) or undefined. Temporaries from `ws`.
    void forward(const ExecContext& ctx, Workspace& ws, const TensorView& x, const TensorView& slot_mapping,
                 const TensorView& out) const;

private:
    struct SharedExpert {
        TensorView gate, up;  // [shared_intermediate, hidden]
        TensorView down;      // [hidden, shared_intermediate]
    };

    MoeSpec spec_;  // sizes and routing; names unused after bind
    int64_t hidden_size_ = 0;
    ops::Activation activation_ = ops::Activation::kSilu;
    TensorView router_;  // [num_experts, hidden]
    // Stacked expert weights in the checkpoint dtype: views of the checkpoint's stacked tensors, or copies of its
    // per-expert tensors (gate_up_storage_, down_storage_).
    TensorView gate_, up_;  // [E, intermediate, hidden] (expert stride 2 * intermediate * hidden)
    TensorView down_;       // [E, hidden, intermediate]
    Tensor gate_up_storage_, down_storage_;
    bool has_shared_ = false;
    SharedExpert shared_;
    TensorView shared_gate_;  // [1, hidden]
};

}  // namespace taco
