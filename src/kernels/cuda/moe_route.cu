// MoE routing on CUDA (ops::moe_route), as the CPU backend (kernels/cpu/moe_ops.cc): one warp per token, reading that
// token's logits only. Softmax top-k picks in (probability descending, expert id ascending) order, which is the CPU's
// repeated first-argmax over the experts not yet taken: pick r is the best expert ranked after pick r - 1, so no
// per-token state beyond the last pick is needed. Sums and maxima are warp butterflies (a fixed tree).
#include <cstdint>

#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/launch.h"

namespace taco::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kNoExpert = 0x7fffffff;  // ranks after every real expert id

// The selection order: a larger value first, equal values by lower expert id.
__device__ __forceinline__ bool ranks_before(float value, int id, float other_value, int other_id) {
    return value > other_value || (value == other_value && id < other_id);
}

// The best (value, id) of the warp in ranks_before order; every lane gets it (the order is total, so the butterfly
// ends on one winner).
__device__ __forceinline__ void warp_best(float& value, int& id) {
    for (int mask = kWarpSize / 2; mask > 0; mask /= 2) {
        const float other_value = __shfl_xor_sync(0xffffffffu, value, mask);
        const int other_id = __shfl_xor_sync(0xffffffffu, id, mask);
        if (ranks_before(other_value, other_id, value, id)) value = other_value, id = other_id;
    }
}

// Padding tokens get expert id num_experts (none) and weight 0. Returns whether token t is padding.
__device__ __forceinline__ bool route_padding(const int64_t* slot_mapping, int64_t t, int num_experts, int top_k,
                                              int lane, int32_t* ids, float* weights) {
    if (slot_mapping == nullptr || slot_mapping[t] >= 0) return false;
    for (int r = lane; r < top_k; r += kWarpSize) ids[r] = num_experts, weights[r] = 0.0f;
    return true;
}

// logits: [tokens, E]; slot_mapping: [tokens] or null; ids, weights: [tokens, top_k].
__global__ void softmax_top_k_kernel(const float* logits, const int64_t* slot_mapping, int64_t tokens, int num_experts,
                                     int top_k, bool renormalize, int32_t* ids, float* weights) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / kWarpSize;
    if (t >= tokens) return;  // the whole warp leaves together
    const int lane = threadIdx.x % kWarpSize;
    const float* row = logits + t * num_experts;
    int32_t* id = ids + t * top_k;
    float* w = weights + t * top_k;
    if (route_padding(slot_mapping, t, num_experts, top_k, lane, id, w)) return;

    float max = -INFINITY;
    for (int e = lane; e < num_experts; e += kWarpSize) max = fmaxf(max, row[e]);
    max = warp_max(max);
    float sum = 0.0f;
    for (int e = lane; e < num_experts; e += kWarpSize) sum += expf(row[e] - max);
    sum = warp_sum(sum);

    // probs[e] = exp(logit - max) / sum, recomputed (the same bits) wherever it is needed.
    float last_value = INFINITY, kept = 0.0f;
    int last_id = -1;
    for (int r = 0; r < top_k; ++r) {
        float best_value = -INFINITY;
        int best_id = kNoExpert;
        for (int e = lane; e < num_experts; e += kWarpSize) {
            const float p = expf(row[e] - max) / sum;
            if (ranks_before(last_value, last_id, p, e) && ranks_before(p, e, best_value, best_id))
                best_value = p, best_id = e;
        }
        warp_best(best_value, best_id);
        if (lane == 0) id[r] = best_id, w[r] = best_value;
        kept += best_value;
        last_value = best_value, last_id = best_id;
    }
    if (renormalize && lane == 0)
        for (int r = 0; r < top_k; ++r) w[r] /= kept;  // lane 0 wrote them: its own writes, in order
}

// softmax(masked)[top] where masked[j] is -inf for experts whose gap to the round's maximum, relative to
// max(|score_j|, maximum), exceeds 2 eps, else remaining[j] (the scores, with the first round's pick at -inf in the
// second round: `excluded`).
__device__ __forceinline__ float sparse_mixer_weight(const float* scores, int num_experts, int lane, float round_max,
                                                     int top, int excluded, float eps) {
    auto masked = [&](int j) {
        const float s = scores[j];
        const float factor = fmaxf(fabsf(s), round_max);
        return (round_max - s) / factor > 2.0f * eps ? -INFINITY : (j == excluded ? -INFINITY : s);
    };
    float max = -INFINITY;
    for (int j = lane; j < num_experts; j += kWarpSize) max = fmaxf(max, masked(j));
    max = warp_max(max);
    float sum = 0.0f;
    for (int j = lane; j < num_experts; j += kWarpSize) sum += expf(masked(j) - max);
    sum = warp_sum(sum);
    return expf(masked(top) - max) / sum;
}

// PhiMoE's sparsemixer with training off (kernels/cpu/moe_ops.cc, route_sparse_mixer): two rounds, top-2, the
// weights not renormalised.
__global__ void sparse_mixer_kernel(const float* logits, const int64_t* slot_mapping, int64_t tokens, int num_experts,
                                    float eps, int32_t* ids, float* weights) {
    grid_dependency_wait();
    const int64_t t = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / kWarpSize;
    if (t >= tokens) return;
    const int lane = threadIdx.x % kWarpSize;
    const float* scores = logits + t * num_experts;
    int32_t* id = ids + t * 2;
    float* w = weights + t * 2;
    if (route_padding(slot_mapping, t, num_experts, 2, lane, id, w)) return;

    int excluded = -1;  // the first round's pick, -inf in the second round
    for (int round = 0; round < 2; ++round) {
        float best_value = -INFINITY;
        int best_id = kNoExpert;
        for (int e = lane; e < num_experts; e += kWarpSize) {
            const float s = e == excluded ? -INFINITY : scores[e];
            if (ranks_before(s, e, best_value, best_id)) best_value = s, best_id = e;
        }
        warp_best(best_value, best_id);
        const float weight = sparse_mixer_weight(scores, num_experts, lane, best_value, best_id, excluded, eps);
        if (lane == 0) id[round] = best_id, w[round] = weight;
        excluded = best_id;
    }
}

}  // namespace

namespace launch {

void moe_route_softmax_top_k(void* stream, const float* logits, const int64_t* slot_mapping, int64_t tokens,
                             int num_experts, int top_k, bool renormalize, int32_t* ids, float* weights) {
    if (tokens == 0) return;
    launch_kernel("softmax_top_k_kernel", softmax_top_k_kernel, blocks_for(tokens, kWarpsPerBlock),
                  kWarpsPerBlock * kWarpSize, 0, as_stream(stream), logits, slot_mapping, tokens, num_experts, top_k,
                  renormalize, ids, weights);
}

void moe_route_sparse_mixer(void* stream, const float* logits, const int64_t* slot_mapping, int64_t tokens,
                            int num_experts, float eps, int32_t* ids, float* weights) {
    if (tokens == 0) return;
    launch_kernel("sparse_mixer_kernel", sparse_mixer_kernel, blocks_for(tokens, kWarpsPerBlock),
                  kWarpsPerBlock * kWarpSize, 0, as_stream(stream), logits, slot_mapping, tokens, num_experts, eps, ids,
                  weights);
}

}  // namespace launch
}  // namespace taco::cuda
