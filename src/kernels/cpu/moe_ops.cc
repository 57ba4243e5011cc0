// Mixture-of-experts ops on the CPU: routing, the stable counting sort of (token, rank) slots by expert, the
// gather into expert order, the weighted combine and the shared expert's sigmoid gate. Routing reads each token's
// own logits and the combine sums each token's experts in ascending expert id, so a token's output does not depend
// on the rest of the batch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/cpu_ops.h"

namespace taco::cpu {
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

// probs, taken: [num_experts] scratch.
void route_softmax_top_k(const float* logits, int64_t num_experts, const ops::MoeRouteParams& params, float* probs,
                         uint8_t* taken, int32_t* ids, float* weights) {
    const float max = logits[argmax(logits, num_experts)];
    float sum = 0.0f;
    for (int64_t e = 0; e < num_experts; ++e) {
        probs[e] = std::exp(logits[e] - max);
        sum += probs[e];
    }
    for (int64_t e = 0; e < num_experts; ++e) probs[e] /= sum;
    // Selection by repeated argmax over what is left keeps ties on the lower id.
    std::fill_n(taken, num_experts, uint8_t(0));
    float kept = 0.0f;
    for (int r = 0; r < params.top_k; ++r) {
        int64_t best = -1;
        for (int64_t e = 0; e < num_experts; ++e)
            if (!taken[e] && (best < 0 || probs[e] > probs[best])) best = e;
        taken[best] = 1;
        ids[r] = int32_t(best);
        weights[r] = probs[best];
        kept += probs[best];
    }
    if (params.renormalize)
        for (int r = 0; r < params.top_k; ++r) weights[r] /= kept;
}

// PhiMoE's sparsemixer with training off. Round 1: m = max(s); experts whose (m - s_j) / max(|s_j|, m) exceeds
// 2 eps are masked to -inf; the weight of the argmax is its softmax over the unmasked logits. Round 2: the same
// on the logits with the first expert set to -inf (the relative gap still measured against |s_j|). The two
// weights are not renormalised.  masked, remaining: [num_experts] scratch.
void route_sparse_mixer(const float* scores, int64_t num_experts, float eps, float* masked, float* remaining,
                        int32_t* ids, float* weights) {
    std::copy_n(scores, num_experts, remaining);
    for (int round = 0; round < 2; ++round) {
        const int64_t top = argmax(remaining, num_experts);
        const float max = remaining[top];
        for (int64_t j = 0; j < num_experts; ++j) {
            const float factor = std::max(std::abs(scores[j]), max);
            masked[j] = (max - scores[j]) / factor > 2.0f * eps ? kNegInf : remaining[j];
        }
        ids[round] = int32_t(top);
        weights[round] = softmax_at(masked, num_experts, top);
        remaining[top] = kNegInf;
    }
}

}  // namespace

void moe_route(const ExecContext& ctx, const TensorView& logits, const TensorView& slot_mapping,
               const ops::MoeRouteParams& params, const TensorView& ids, const TensorView& weights) {
    const int64_t num_tokens = logits.shape[0], num_experts = logits.shape[1], k = params.top_k;
    const int64_t* slots = slot_mapping.ndim > 0 ? slot_mapping.as<int64_t>() : nullptr;
    thread_local std::vector<float> scratch;  // grows once, then reused
    if (scratch.size() < size_t(2 * num_experts)) scratch.resize(size_t(2 * num_experts));
    float* a = scratch.data();
    float* b = scratch.data() + num_experts;
    for (int64_t t = 0; t < num_tokens; ++t) {
        int32_t* id = ids.row<int32_t>(t);
        float* w = weights.row<float>(t);
        if (slots != nullptr && slots[t] < 0) {  // padding
            std::fill_n(id, k, int32_t(num_experts));
            std::fill_n(w, k, 0.0f);
            continue;
        }
        switch (params.routing) {
            case ops::MoeRouting::kSoftmaxTopK:
                route_softmax_top_k(logits.row<float>(t), num_experts, params, a, reinterpret_cast<uint8_t*>(b), id, w);
                break;
            case ops::MoeRouting::kSparseMixer:
                route_sparse_mixer(logits.row<float>(t), num_experts, params.sparsemixer_eps, a, b, id, w);
                break;
        }
    }
}

void moe_align(const ExecContext& ctx, const TensorView& ids, int num_experts, const TensorView& sorted_slots,
               const TensorView& slot_rows, const TensorView& expert_offsets) {
    const int64_t num_slots = ids.numel();
    const int32_t* id = ids.as<int32_t>();
    int32_t* offsets = expert_offsets.as<int32_t>();
    // Counting sort, padding (id == num_experts) as one more bucket after the last expert.
    thread_local std::vector<int32_t> next;
    next.assign(size_t(num_experts) + 2, 0);
    for (int64_t s = 0; s < num_slots; ++s) {
        TACO_CHECK_MSG(id[s] >= 0 && id[s] <= num_experts, "moe_align: expert id {} of {}", id[s], num_experts);
        ++next[size_t(id[s]) + 1];
    }
    for (int e = 0; e <= num_experts; ++e) next[size_t(e) + 1] += next[size_t(e)];
    for (int e = 0; e <= num_experts; ++e) offsets[e] = next[size_t(e)];
    int32_t* sorted = sorted_slots.as<int32_t>();
    int32_t* rows = slot_rows.as<int32_t>();
    for (int64_t s = 0; s < num_slots; ++s) {
        const int32_t row = next[size_t(id[s])]++;
        sorted[row] = int32_t(s);
        rows[s] = row;
    }
}

void moe_gather(const ExecContext& ctx, const TensorView& x, const TensorView& sorted_slots,
                const TensorView& expert_offsets, int top_k, const TensorView& out) {
    const int64_t num_experts = expert_offsets.shape[0] - 1, hidden = x.shape[1];
    const int32_t ran = expert_offsets.as<int32_t>()[num_experts];
    const int32_t* sorted = sorted_slots.as<int32_t>();
    for (int32_t i = 0; i < ran; ++i) std::copy_n(x.row<float>(sorted[i] / top_k), hidden, out.row<float>(i));
    std::fill(out.row<float>(ran), out.row<float>(0) + out.numel(), 0.0f);
}

// A padding token's slots read the zeroed rows past offsets[E] with weight 0: its output is 0.
void moe_combine(const ExecContext& ctx, const TensorView& expert_out, const TensorView& slot_rows,
                 const TensorView& ids, const TensorView& weights, const TensorView& out) {
    const int64_t num_tokens = ids.shape[0], k = ids.shape[1], hidden = out.shape[1];
    thread_local std::vector<int64_t> ranks;
    if (ranks.size() < size_t(k)) ranks.resize(size_t(k));
    const int32_t* rows = slot_rows.as<int32_t>();
    for (int64_t t = 0; t < num_tokens; ++t) {
        const int32_t* id = ids.row<int32_t>(t);
        const float* w = weights.row<float>(t);
        for (int64_t r = 0; r < k; ++r) ranks[size_t(r)] = r;
        std::sort(ranks.begin(), ranks.begin() + k, [&](int64_t a, int64_t b) { return id[a] < id[b]; });
        float* o = out.row<float>(t);
        std::fill(o, o + hidden, 0.0f);
        for (int64_t i = 0; i < k; ++i) {
            const int64_t r = ranks[size_t(i)];
            const float weight = w[r];
            const float* y = expert_out.row<float>(rows[t * k + r]);
            for (int64_t h = 0; h < hidden; ++h) {
                const float weighted = weight * y[h];
                o[h] += weighted;
            }
        }
    }
}

void add_sigmoid_gated(const ExecContext& ctx, const TensorView& shared, const TensorView& gate,
                       const TensorView& out) {
    const int64_t hidden = out.shape[1];
    for (int64_t t = 0; t < out.shape[0]; ++t) {
        const float scale = 1.0f / (1.0f + std::exp(-gate.row<float>(t)[0]));
        const float* s = shared.row<float>(t);
        float* o = out.row<float>(t);
        for (int64_t h = 0; h < hidden; ++h) {
            const float scaled = scale * s[h];
            o[h] += scaled;
        }
    }
}

}  // namespace taco::cpu
