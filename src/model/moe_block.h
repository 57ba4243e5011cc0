// MoeBlock: the mixture-of-experts MLP of one sparse decoder layer. forward() routes every token (moe_routing.h),
// groups the batch's tokens by expert and runs each expert's gate/up/down as ops::matmul over its rows (a
// grouped GEMM), then sums each token's experts in ascending expert id (the order transformers adds them in),
// plus the shared expert scaled by sigmoid(shared gate) when the family has one.
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
#include "kernels/ops.h"
#include "model/moe_spec.h"

namespace taco {

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

    // x, out: [T, hidden] f32.
    void forward(const TensorView& x, const TensorView& out) const;

private:
    struct Expert {
        TensorView gate, up;  // [intermediate, hidden]
        TensorView down;      // [hidden, intermediate]
    };
    void run_mlp(const Expert& expert, int64_t intermediate, const TensorView& x, const TensorView& out) const;

    MoeSpec spec_;  // sizes and routing; names unused after bind
    int64_t hidden_size_ = 0;
    ops::Activation activation_ = ops::Activation::kSilu;
    TensorView router_;  // [num_experts, hidden]
    std::vector<Expert> experts_;
    bool has_shared_ = false;
    Expert shared_;
    TensorView shared_gate_;  // [1, hidden]
};

}  // namespace taco
