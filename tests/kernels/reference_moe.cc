// Mixture-of-experts ops of the scalar reference (reference_ops.h): routing in double, the expert sort as nested
// loops, gather, grouped matmul, combine and the shared expert's gate.
#include <cmath>
#include <limits>

#include "core/check.h"
#include "reference_ops.h"

namespace taco::ref {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The first index of the largest value (ties to the lower index).
int64_t argmax(const Values& x) {
    int64_t best = 0;
    for (int64_t i = 1; i < int64_t(x.size()); ++i)
        if (x[size_t(i)] > x[size_t(best)]) best = i;
    return best;
}

// softmax(x)[i]; -inf entries weigh 0.
double softmax_at(const Values& x, int64_t i) {
    const double max = x[size_t(argmax(x))];
    double sum = 0;
    for (double v : x) sum += std::exp(v - max);
    return std::exp(x[size_t(i)] - max) / sum;
}

// Softmax over all experts, the k largest probabilities in rank order (ties to the lower id), optionally
// divided by their sum.
void route_softmax_top_k(const Values& logits, const ops::MoeRouteParams& params, int32_t* ids, double* weights) {
    Values left(logits.size());
    for (size_t e = 0; e < logits.size(); ++e) left[e] = softmax_at(logits, int64_t(e));
    double kept = 0;
    for (int r = 0; r < params.top_k; ++r) {
        const int64_t best = argmax(left);
        ids[r] = int32_t(best);
        weights[r] = left[size_t(best)];
        kept += weights[r];
        left[size_t(best)] = kNegInf;
    }
    if (params.renormalize)
        for (int r = 0; r < params.top_k; ++r) weights[r] /= kept;
}

// PhiMoE's sparsemixer (transformers' modeling_phimoe.sparsemixer, training off), written as its two rounds:
//   threshold = max(scores_left); factor_j = max(|scores_j|, threshold);
//   gates = scores_left with -inf where (threshold - scores_j) / factor_j > 2 eps;
//   weight = softmax(gates)[argmax(scores_left)]; then the chosen expert is set to -inf in scores_left.
void route_sparse_mixer(const Values& scores, double eps, int32_t* ids, double* weights) {
    Values left = scores;
    for (int round = 0; round < 2; ++round) {
        const int64_t top = argmax(left);
        const double threshold = left[size_t(top)];
        Values gates = left;
        for (size_t j = 0; j < scores.size(); ++j) {
            const double factor = std::max(std::abs(scores[j]), threshold);
            if ((threshold - scores[j]) / factor > 2 * eps) gates[j] = kNegInf;
        }
        ids[round] = int32_t(top);
        weights[round] = softmax_at(gates, top);
        left[size_t(top)] = kNegInf;
    }
}

}  // namespace

Routing moe_route(const TensorView& logits, const TensorView& slot_mapping, const ops::MoeRouteParams& params) {
    const int64_t tokens = logits.shape[0], experts = logits.shape[1], k = params.top_k;
    Routing out{std::vector<int32_t>(size_t(tokens * k)), Values(size_t(tokens * k))};
    for (int64_t t = 0; t < tokens; ++t) {
        int32_t* ids = out.ids.data() + t * k;
        double* weights = out.weights.data() + t * k;
        if (slot_mapping.ndim > 0 && index_at(slot_mapping, t) < 0) {
            for (int64_t r = 0; r < k; ++r) ids[r] = int32_t(experts), weights[r] = 0;
            continue;
        }
        Values row(static_cast<size_t>(experts));
        for (int64_t e = 0; e < experts; ++e) row[size_t(e)] = value_at(logits, t * experts + e);
        switch (params.routing) {
            case ops::MoeRouting::kSoftmaxTopK: route_softmax_top_k(row, params, ids, weights); break;
            case ops::MoeRouting::kSparseMixer: route_sparse_mixer(row, params.sparsemixer_eps, ids, weights); break;
        }
    }
    return out;
}

Alignment moe_align(const TensorView& ids, int num_experts) {
    const int64_t num_slots = ids.numel();
    Alignment out{std::vector<int32_t>(size_t(num_slots)), std::vector<int32_t>(size_t(num_slots)),
                  std::vector<int32_t>(size_t(num_experts) + 1)};
    int32_t row = 0;
    // Expert 0, 1, ..., E - 1, then the padding id E (whose first row is offsets[E]); slots in increasing order
    // within each.
    for (int64_t e = 0; e <= num_experts; ++e) {
        out.expert_offsets[size_t(e)] = row;
        for (int64_t s = 0; s < num_slots; ++s) {
            const int64_t id = index_at(ids, s);
            TACO_CHECK(id >= 0 && id <= num_experts);
            if (id != e) continue;
            out.sorted_slots[size_t(row)] = int32_t(s);
            out.slot_rows[size_t(s)] = row++;
        }
    }
    return out;
}

Values moe_gather(const TensorView& x, const TensorView& sorted_slots, const TensorView& expert_offsets, int top_k) {
    const int64_t hidden = x.shape[1], rows = sorted_slots.numel();
    const int64_t ran = index_at(expert_offsets, expert_offsets.numel() - 1);
    Values out(size_t(rows * hidden), 0.0);
    for (int64_t i = 0; i < ran; ++i) {
        const int64_t token = index_at(sorted_slots, i) / top_k;
        for (int64_t h = 0; h < hidden; ++h) out[size_t(i * hidden + h)] = value_at(x, token * hidden + h);
    }
    return out;
}

Values grouped_matmul(const TensorView& x, const TensorView& w, const TensorView& expert_offsets) {
    const int64_t experts = w.shape[0], n = w.shape[1], k = w.shape[2];
    Values y(size_t(x.shape[0] * n), 0.0);
    for (int64_t e = 0; e < experts; ++e) {
        for (int64_t i = index_at(expert_offsets, e); i < index_at(expert_offsets, e + 1); ++i) {
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t t = 0; t < k; ++t) sum += value_at(x, i * k + t) * value_at(w, (e * n + j) * k + t);
                y[size_t(i * n + j)] = sum;
            }
        }
    }
    return y;
}

Values moe_combine(const TensorView& expert_out, const TensorView& slot_rows, const TensorView& ids,
                   const TensorView& weights) {
    const int64_t tokens = ids.shape[0], k = ids.shape[1], hidden = expert_out.shape[1];
    Values out(size_t(tokens * hidden), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t r = 0; r < k; ++r) {  // in double the order of the experts does not matter
            const int64_t row = index_at(slot_rows, t * k + r);
            const double weight = value_at(weights, t * k + r);
            for (int64_t h = 0; h < hidden; ++h)
                out[size_t(t * hidden + h)] += weight * value_at(expert_out, row * hidden + h);
        }
    }
    return out;
}

Values add_sigmoid_gated(const TensorView& shared, const TensorView& gate, const TensorView& out_before) {
    const int64_t hidden = out_before.shape[1];
    Values out = values_of(out_before);
    for (int64_t t = 0; t < out_before.shape[0]; ++t) {
        const double g = 1.0 / (1.0 + std::exp(-value_at(gate, t)));
        for (int64_t h = 0; h < hidden; ++h) out[size_t(t * hidden + h)] += g * value_at(shared, t * hidden + h);
    }
    return out;
}

}  // namespace taco::ref
