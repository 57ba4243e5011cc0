// Top-k expert routing of a mixture-of-experts layer: router logits -> (expert, weight) per token and rank, on the
// host (ops::moe_route does the work; this is its convenience form for tests and tools). Each token is routed
// from its own logits alone, so routing is batch-invariant by construction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/moe_spec.h"

namespace taco {

struct ExpertChoice {
    int32_t expert = 0;
    float weight = 0.0f;  // multiplies the expert's output
};

// logits: [T, num_experts] f32. Returns [T * top_k] choices, token t's at [t * top_k, (t + 1) * top_k) in rank
// order (largest first). Ties go to the lower expert id.
//   kSoftmaxTopK: p = softmax(logits); keep the top_k largest p; if renormalize, divide them by their sum.
//   kSparseMixer (top_k must be 2): PhiMoE's inference routing, see moe_routing.cc.
std::vector<ExpertChoice> route_tokens(const TensorView& logits, const MoeSpec& spec);

}  // namespace taco
