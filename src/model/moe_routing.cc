#include "model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace taco {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Index of the first maximum (torch.max / topk return the lowest index among equal values on CPU).
int64_t argmax(const float* x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

// softmax(x)[i] in fp32 as torch computes it: exp(x - max) / sum; -inf entries contribute 0.
float softmax_at(const float* x, int64_t n, int64_t i) {
    const float max = x[argmax(x, n)];
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - max);
    return std::exp(x[i] - max) / sum;
}

void route_softmax_top_k(const float* logits, int64_t num_experts, const MoeSpec& spec, ExpertChoice* out) {
    std::vector<float> probs(size_t(num_experts), 0.0f);
    const float max = logits[argmax(logits, num_experts)];
    float sum = 0.0f;
    for (int64_t e = 0; e < num_experts; ++e) {
        probs[size_t(e)] = std::exp(logits[e] - max);
        sum += probs[size_t(e)];
    }
    for (float& p : probs) p /= sum;
    // Selection by repeated argmax over what is left keeps ties on the lower id.
    std::vector<bool> taken(size_t(num_experts), false);
    float kept = 0.0f;
    for (int64_t r = 0; r < spec.top_k; ++r) {
        int64_t best = -1;
        for (int64_t e = 0; e < num_experts; ++e)
            if (!taken[size_t(e)] && (best < 0 || probs[size_t(e)] > probs[size_t(best)])) best = e;
        taken[size_t(best)] = true;
        out[r] = ExpertChoice{int32_t(best), probs[size_t(best)]};
        kept += probs[size_t(best)];
    }
    if (spec.renormalize)
        for (int64_t r = 0; r < spec.top_k; ++r) out[r].weight /= kept;
}

// PhiMoE's sparsemixer with training off. Round 1: m = max(s); experts whose (m - s_j) / max(|s_j|, m) exceeds
// 2 eps are masked to -inf; the weight of the argmax is its softmax over the unmasked logits. Round 2: the same
// on the logits with the first expert set to -inf (the relative gap still measured against |s_j|). The two
// weights are not renormalised.
void route_sparse_mixer(const float* scores, int64_t num_experts, float eps, ExpertChoice* out) {
    std::vector<float> masked(static_cast<size_t>(num_experts));
    std::vector<float> remaining(scores, scores + num_experts);
    for (int round = 0; round < 2; ++round) {
        const int64_t top = argmax(remaining.data(), num_experts);
        const float max = remaining[size_t(top)];
        for (int64_t j = 0; j < num_experts; ++j) {
            const float factor = std::max(std::abs(scores[j]), max);
            masked[size_t(j)] = (max - scores[j]) / factor > 2.0f * eps ? kNegInf : remaining[size_t(j)];
        }
        out[round] = ExpertChoice{int32_t(top), softmax_at(masked.data(), num_experts, top)};
        remaining[size_t(top)] = kNegInf;
    }
}

}  // namespace

std::vector<ExpertChoice> route_tokens(const TensorView& logits, const MoeSpec& spec) {
    TACO_CHECK(logits.ndim == 2 && logits.dtype == DType::kF32 && logits.is_contiguous());
    TACO_CHECK_EQ(logits.shape[1], spec.num_experts);
    TACO_CHECK(spec.top_k >= 1 && spec.top_k <= spec.num_experts);
    const int64_t num_tokens = logits.shape[0];
    std::vector<ExpertChoice> choices(size_t(num_tokens * spec.top_k));
    for (int64_t t = 0; t < num_tokens; ++t) {
        ExpertChoice* out = choices.data() + t * spec.top_k;
        switch (spec.routing) {
            case MoeRouting::kSoftmaxTopK:
                route_softmax_top_k(logits.row<float>(t), spec.num_experts, spec, out);
                break;
            case MoeRouting::kSparseMixer:
                TACO_CHECK_EQ(spec.top_k, 2);
                route_sparse_mixer(logits.row<float>(t), spec.num_experts, spec.sparsemixer_eps, out);
                break;
        }
    }
    return choices;
}

}  // namespace taco
