// Top-p on the GPU (TokenFilter::keep_nucleus: the kept set is the smallest most-likely prefix, in (weight desc,
// id asc) order, whose mass reaches target = total - (1 - p) total) without sorting the candidates:
//   1. while the candidates' weights are summed, a histogram of their mass by weight (kMassBins about log-uniform
//      bins between the lowest weight and 1, mass_bin) in 2^-32 fixed point: integer sums, exact in any order, each
//      bin's true mass within its count * 2^-32 of what it holds;
//   2. plan_nucleus: the bins [first, last] where the cut can lie, with margins for those errors and for rounding:
//      every candidate in a bin before `first` is kept, none after `last` is;
//   3. the candidates in [first, last] (usually a few hundred) are sorted by logit, in shared memory when they fit,
//      else with cub's segmented sort, and draw_sorted_nucleus scans them from the mass of the bins before, in
//      double, for the cut.
// The draw is the Gumbel-max over the bins before `first` and the kept part of the sorted ones.
#pragma once

#include <cub/block/block_scan.cuh>

#include <climits>
#include <cstdint>

#include "exec/philox.h"
#include "kernels/cuda/sampling_block.cuh"

namespace taco::cuda::sampling {

constexpr int kMassBins = 1024;
constexpr int kSortItems = 4;                                       // per thread in the shared-memory sort
constexpr int kSharedSortCapacity = kSamplingThreads * kSortItems;  // candidates sorted in shared memory
constexpr double kFixedPointScale = 4294967296.0;                   // 2^32

// The mass bin of a candidate's weight (in [0, 1]): its float's distance in ulps below 1.0f, shifted right by
// `shift`, so bins are about log-uniform. Monotone, and a function of the weight alone: equal weights (which
// TokenFilter orders by id, whatever their logits) always share a bin, so the bins before the cut's hold exactly
// the tokens that come before every token of the cut's bins in TokenFilter's order.
__device__ __forceinline__ int mass_bin(double weight, int shift) {
    const uint32_t ulps_below_one = 0x3F800000u - __float_as_uint(__double2float_rn(weight));
    const uint32_t bin = ulps_below_one >> shift;
    return bin < uint32_t(kMassBins) ? int(bin) : kMassBins - 1;
}

// The shift that spreads weights down to `lowest_weight` over at most kMassBins bins.
__device__ __forceinline__ int mass_bin_shift(double lowest_weight) {
    const uint32_t span = 0x3F800000u - __float_as_uint(__double2float_rn(lowest_weight));
    int shift = 0;
    while ((span >> shift) >= uint32_t(kMassBins)) ++shift;
    return shift;
}

// A weight in (0, 1] in 2^-32 fixed point, rounded down: at most 2^32, so 2^31 of them sum without overflow.
__device__ __forceinline__ unsigned long long fixed_point(double weight) {
    return __double2ull_rz(__dmul_rn(weight, kFixedPointScale));
}

struct MassHistogram {
    unsigned long long mass[kMassBins];  // 2^-32 units
    uint32_t count[kMassBins];
};

// The bins the cut lies in: every candidate of a bin before `first` is kept; none after `last` is.
struct NucleusPlan {
    int32_t first_bin, last_bin;
    int32_t num_in_range;  // candidates in bins [first_bin, last_bin]
};

// Thread 0's walk over the histogram. `margin` covers the rounding of double sums of `count` weights (the CPU's
// and ours) around `target`; the fixed point's own error is counted bin by bin.
__device__ NucleusPlan plan_nucleus(const MassHistogram& h, double target, double total, int32_t count) {
    const double margin = total * (double(count) * 2.3e-16 + 1e-12);
    unsigned long long held = 0, num = 0;  // through bin j: fixed-point mass and candidates
    NucleusPlan plan{-1, kMassBins - 1, 0};
    for (int j = 0; j < kMassBins; ++j) {
        held += h.mass[j];
        num += h.count[j];
        const double at_least = double(held) / kFixedPointScale;       // the true mass through bin j is in
        const double at_most = double(held + num) / kFixedPointScale;  // [at_least, at_most]
        if (plan.first_bin < 0 && at_most >= target - margin) plan.first_bin = j;
        if (at_least >= target + margin) {
            plan.last_bin = j;
            break;
        }
    }
    if (plan.first_bin < 0) plan.first_bin = plan.last_bin;
    for (int j = plan.first_bin; j <= plan.last_bin; ++j) plan.num_in_range += int32_t(h.count[j]);
    return plan;
}

struct NucleusShared {
    ReduceShared reduce;
    RadixShared radix;
    cub::BlockScan<double, kSamplingThreads>::TempStorage scan;
};

// The kept part of m candidates sorted by logit, descending (ties in any order), whose running mass starts at
// `carry` (the candidates kept before them), and the Gumbel-max among them (no_best() if none is kept).
// `weight_of(key)` is the candidate's weight from its ordered logit bits, as it was computed when summed.
template <class WeightOf>
__device__ Best draw_sorted_nucleus(const uint32_t* keys, const int32_t* ids, int64_t m, double carry, double target,
                                    WeightOf weight_of, const float* logits, uint64_t seed, int64_t draw_index,
                                    float max_logit, float temperature, NucleusShared& sh) {
    const int tid = int(threadIdx.x);
    auto weight = [&](int64_t pos) { return weight_of(keys[pos]); };

    // The cut: the first position whose running mass reaches the target (none: all are kept, as the CPU keeps
    // every candidate when rounding leaves the sum short).
    int64_t kept = m;
    for (int64_t base = 0; base < m; base += int64_t(kSamplingThreads) * kSortItems) {
        const int64_t first_pos = base + int64_t(tid) * kSortItems;
        double running[kSortItems];
        double thread_mass = 0;
        for (int j = 0; j < kSortItems; ++j) {
            if (first_pos + j < m) thread_mass = __dadd_rn(thread_mass, weight(first_pos + j));
            running[j] = thread_mass;
        }
        double before = 0, tile_mass = 0;
        cub::BlockScan<double, kSamplingThreads>(sh.scan).ExclusiveSum(thread_mass, before, tile_mass);
        long long cut = LLONG_MAX;
        const double start = __dadd_rn(carry, before);
        for (int j = 0; j < kSortItems; ++j) {
            if (first_pos + j < m && __dadd_rn(start, running[j]) >= target) {
                cut = first_pos + j;
                break;
            }
        }
        cut = block_reduce(cut, MinOp(), (long long)LLONG_MAX, sh.reduce);
        if (cut != LLONG_MAX) {
            kept = cut + 1;
            break;
        }
        carry = __dadd_rn(carry, tile_mass);
    }

    // TokenFilter orders equal weights by id; the sort orders by logit, and ties in any order. When the cut splits a
    // run of equal weights, the run's kept share are its lowest ids.
    bool split_run = false;
    int64_t run_begin = 0, run_end = 0;
    RadixSelection lowest_ids{0, 0};
    if (kept < m && weight(kept) == weight(kept - 1)) {
        const double w = weight(kept - 1);
        long long lo = LLONG_MAX, hi = -1;
        for (int64_t pos = tid; pos < m; pos += kSamplingThreads)
            if (weight(pos) == w) {
                lo = pos < lo ? pos : lo;
                hi = pos > hi ? pos : hi;
            }
        run_begin = block_reduce(lo, MinOp(), (long long)LLONG_MAX, sh.reduce);
        run_end = block_reduce(hi, MaxOp(), -1LL, sh.reduce) + 1;
        lowest_ids = block_select_largest([&](int64_t j) { return uint64_t(~uint32_t(ids[run_begin + j])) << 32; },
                                          run_end - run_begin, kept - run_begin, 32, sh.radix);
        split_run = true;
    }

    Best best = no_best();
    const int64_t end = split_run ? run_end : kept;
    for (int64_t pos = tid; pos < end; pos += kSamplingThreads) {
        const int32_t token = ids[pos];
        if (split_run && pos >= run_begin && !lowest_ids.selects(uint64_t(~uint32_t(token)) << 32)) continue;
        consider(best, token, logits[token], philox::token_bits(seed, draw_index, token), max_logit, temperature);
    }
    return block_reduce(best, BestOp(), no_best(), sh.reduce);
}

}  // namespace taco::cuda::sampling
