// The sampling kernels of DeviceBatchSampler (kernels/cuda/sampling.h has the step's outline). Each repeats
// BatchSampler's arithmetic op for op: floats through philox.h's correctly rounded ops (no fma), doubles through
// __d*_rn intrinsics, so the Gumbel keys are bit-identical to the CPU's and the filter's weights differ from it only
// where CUDA's exp / log and glibc's differ in the last bit or where a sum's order rounds differently (about 1e-16
// relative: a token exactly on a min_p or top-p edge could fall the other way).
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <climits>

#include "exec/philox.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_common.cuh"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_block.cuh"
#include "kernels/cuda/sampling_nucleus.cuh"

namespace taco::cuda {

namespace sampling {

// What the prepare kernel leaves a draw for the finish kernel.
struct DrawState {
    double target;          // top-p: the mass the kept prefix must reach
    double kept_mass;       // top-p: mass of the candidates kept before the sorted ones
    double log_normalizer;  // raw log-softmax: max + log(sum exp(logit - max))
    float max_logit;        // of the processed logits (finite when pending)
    float best_value;       // top-p: the Gumbel-max over the candidates kept before the sorted ones
    int32_t best_token;
    int32_t token;       // the draw unless pending; the argmax when pending
    int32_t num_sorted;  // top-p candidates in the draw's sort segment
    int32_t pending;     // 1: the top-p cut and the draw are the finish kernel's (after the device-wide sort)
};
static_assert(sizeof(DrawState) == 48, "DrawState layout");

struct KernelArgs {
    const float* logits;  // [rows, vocab], row stride row_stride
    int64_t row_stride;
    int32_t vocab;
    const DrawParams* params;  // [num_draws]
    const EditEntry* edits;
    float* processed;     // [edit slots, vocab]
    DrawState* state;     // [num_draws]
    uint32_t* sort_keys;  // [sort slots, vocab]: the prepare kernel's output, the sort's input
    int32_t* sort_ids;
    int32_t* segment_begin;  // [sort slots]
    int32_t* segment_end;
    unsigned char* results;  // int32 tokens[num_draws], then the logprob records
    const uint32_t* masks;   // [num_masks, mask_words] grammar masks
    float* masked;           // [num_masks, vocab] the masked rows
    int32_t mask_words;
};

// The model's row of a draw, after its grammar mask when it has one (mask_kernel's copy).
__device__ const float* raw_row(const KernelArgs& a, const DrawParams& p) {
    return p.mask_slot >= 0 ? a.masked + int64_t(p.mask_slot) * a.vocab : a.logits + p.logits_row * a.row_stride;
}

// The logits a draw samples from: its processed copy when it has edits, else the raw row.
__device__ const float* sampled_row(const KernelArgs& a, const DrawParams& p) {
    return p.num_edits > 0 ? a.processed + int64_t(p.edit_slot) * a.vocab : raw_row(a, p);
}

__device__ LogprobRecord* record_of(const KernelArgs& a, const DrawParams& p) {
    return reinterpret_cast<LogprobRecord*>(a.results + p.logprob_offset);
}

// BatchSampler's process_in_place for one token: -inf if suppressed, + bias, then the penalties in double.
__device__ void apply_edit(float* logits, const EditEntry& e, const DrawParams& p) {
    float x = logits[e.token];
    if (e.flags & kEditSuppress) x = -INFINITY;
    if (e.flags & kEditBias) x = __fadd_rn(x, e.bias);
    if (e.flags & kEditPenalise) {
        double v = double(x);
        if (p.flags & kDrawUsePrompt)
            v = v > 0 ? __ddiv_rn(v, p.repetition_penalty) : __dmul_rn(v, p.repetition_penalty);
        v = __dsub_rn(v, __dmul_rn(p.frequency_penalty, double(e.count)));
        if (e.count > 0) v = __dsub_rn(v, p.presence_penalty);
        x = __double2float_rn(v);
    }
    logits[e.token] = x;
}

// TokenFilter::select's test of one token: whether it is a candidate, and its weight.
__device__ __forceinline__ bool candidate_weight(float logit, const RadixSelection& top_k, double max_logit,
                                                 const DrawParams& p, double& weight) {
    const float key = order_key(logit);
    if (key == -INFINITY || !top_k.selects(uint64_t(ordered_bits(logit)) << 32)) return false;
    const double scaled = __ddiv_rn(__dsub_rn(double(key), max_logit), p.filter_temperature);
    if (scaled < p.min_scaled) return false;
    weight = exp(scaled);
    return weight > 0 && weight >= p.min_p;
}

// The weight of a candidate from its ordered logit bits: what candidate_weight computed for it.
struct WeightOfBits {
    double max_logit, temperature;
    __device__ double operator()(uint32_t bits) const {
        return exp(__ddiv_rn(__dsub_rn(double(key_of_ordered_bits(bits)), max_logit), temperature));
    }
};

__device__ __forceinline__ uint64_t logprob_key(const float* raw, int64_t i) {
    return (uint64_t(ordered_bits(raw[i])) << 32) | uint64_t(0xFFFFFFFFu - uint32_t(i));
}

using SharedSort = cub::BlockRadixSort<uint32_t, kSamplingThreads, kSortItems, int32_t>;

struct PrepareShared {
    NucleusShared nucleus;
    union {
        MassHistogram histogram;
        SharedSort::TempStorage sort;
    } u;
    uint32_t sort_keys[kSharedSortCapacity];  // top-p candidates of the cut's bins, sorted in place
    int32_t sort_ids[kSharedSortCapacity];
    NucleusPlan plan;
    int32_t num_gathered;
    uint64_t top[kMaxTopLogprobs];
    int32_t num_top;
};

// logprobs_of (sample_logprobs.cc) on the raw row, but for the sampled token (the finish kernel's): returns the
// log normaliser and writes the top entries of the draw's record.
__device__ double raw_logprobs(const KernelArgs& a, const DrawParams& p, const float* raw, PrepareShared& sh) {
    const int tid = int(threadIdx.x);
    const int64_t vocab = a.vocab;
    float max_key = -INFINITY;
    for (int64_t i = tid; i < vocab; i += kSamplingThreads) {
        const float key = order_key(raw[i]);
        max_key = key > max_key ? key : max_key;
    }
    max_key = block_reduce(max_key, MaxOp(), -INFINITY, sh.nucleus.reduce);
    double log_normalizer = INFINITY;  // no finite logit: every logprob is -inf
    if (max_key > -INFINITY) {
        double sum = 0;
        for (int64_t i = tid; i < vocab; i += kSamplingThreads)
            sum = __dadd_rn(sum, exp(__dsub_rn(double(order_key(raw[i])), double(max_key))));
        sum = block_reduce(sum, DoubleSumOp(), 0.0, sh.nucleus.reduce);
        log_normalizer = __dadd_rn(double(max_key), log(sum));
    }
    LogprobRecord* record = record_of(a, p);
    const int64_t k = p.num_top_logprobs;
    if (k == 0) {
        if (tid == 0) record->num_top = 0;
        return log_normalizer;
    }
    // The k largest by (logit desc, id asc), as logprobs_of orders them: one unique key per token.
    const RadixSelection selection =
        block_select_largest([&](int64_t i) { return logprob_key(raw, i); }, vocab, k, 64, sh.nucleus.radix);
    if (tid == 0) sh.num_top = 0;
    __syncthreads();
    for (int64_t i = tid; i < vocab; i += kSamplingThreads) {
        const uint64_t key = logprob_key(raw, i);
        if (!selection.selects(key)) continue;
        const int slot = atomicAdd(&sh.num_top, 1);
        if (slot < kMaxTopLogprobs) sh.top[slot] = key;
    }
    __syncthreads();
    if (tid == 0) {
        const int n = min(sh.num_top, int(k));
        for (int i = 1; i < n; ++i)  // insertion sort, largest key first
            for (int j = i; j > 0 && sh.top[j] > sh.top[j - 1]; --j) {
                const uint64_t t = sh.top[j];
                sh.top[j] = sh.top[j - 1];
                sh.top[j - 1] = t;
            }
        TopLogprob* top = reinterpret_cast<TopLogprob*>(record + 1);
        for (int i = 0; i < n; ++i) {
            const int32_t token = int32_t(0xFFFFFFFFu - uint32_t(sh.top[i]));
            top[i] = {token, __double2float_rn(__dsub_rn(double(order_key(raw[token])), log_normalizer))};
        }
        record->num_top = n;
    }
    return log_normalizer;
}

// One block per draw: a draw with a grammar mask gets its row with the tokens the mask leaves out at -inf
// (BatchSampler's apply_token_mask: an all-zero mask changes nothing); the others return at once.
__global__ void __launch_bounds__(kSamplingThreads) mask_kernel(KernelArgs a) {
    grid_dependency_wait();
    const DrawParams p = a.params[blockIdx.x];
    if (p.mask_slot < 0) return;
    const uint32_t* mask = a.masks + int64_t(p.mask_slot) * a.mask_words;
    const float* src = a.logits + p.logits_row * a.row_stride;
    float* dst = a.masked + int64_t(p.mask_slot) * a.vocab;
    int any = 0;
    for (int w = int(threadIdx.x); w < a.mask_words; w += kSamplingThreads) any |= mask[w] != 0;
    any = __syncthreads_or(any);
    for (int64_t i = threadIdx.x; i < a.vocab; i += kSamplingThreads) {
        const bool allowed = !any || ((mask[i / 32] >> (i % 32)) & 1u);
        dst[i] = allowed ? src[i] : -INFINITY;
    }
}

// One block per draw: edits, raw logprobs, and the draw itself unless top-p leaves it to the finish kernel.
__global__ void __launch_bounds__(kSamplingThreads) prepare_kernel(KernelArgs a) {
    grid_dependency_wait();
    __shared__ PrepareShared sh;
    const int tid = int(threadIdx.x);
    const int draw = int(blockIdx.x);
    const DrawParams p = a.params[draw];
    const int64_t vocab = a.vocab;
    const int64_t num_groups = (vocab + 3) / 4;
    const float* raw = raw_row(a, p);

    if (p.num_edits > 0) {
        float* processed = a.processed + int64_t(p.edit_slot) * vocab;
        for (int64_t i = tid; i < vocab; i += kSamplingThreads) processed[i] = raw[i];
        __syncthreads();
        for (int e = tid; e < p.num_edits; e += kSamplingThreads) apply_edit(processed, a.edits[p.edit_begin + e], p);
        __syncthreads();
    }
    const float* logits = sampled_row(a, p);

    DrawState st{};
    st.token = 0;
    if (p.flags & kDrawLogprobs) st.log_normalizer = raw_logprobs(a, p, raw, sh);

    Best top = no_best();
    float lowest = INFINITY;  // the lowest finite logit: where top-p's mass bins start
    for (int64_t i = tid; i < vocab; i += kSamplingThreads) {
        const float key = order_key(logits[i]);
        top = better(top, {key, int32_t(i)});
        if (isfinite(key)) lowest = key < lowest ? key : lowest;
    }
    top = block_reduce(top, BestOp(), no_best(), sh.nucleus.reduce);
    st.token = top.index;
    st.max_logit = top.value;
    st.best_value = -INFINITY;
    st.best_token = INT32_MAX;
    // Greedy; or nothing to draw from (no finite logit) or a +inf logit that outweighs everything: the argmax.
    const bool drawn = !(p.flags & kDrawGreedy) && isfinite(top.value);
    const float max_logit = top.value;
    const float temperature = p.gumbel_temperature;

    if (drawn && !(p.flags & kDrawRestricts)) {
        // Every token with a finite logit is allowed.
        Best best = no_best();
        for (int64_t g = tid; g < num_groups; g += kSamplingThreads) {
            const philox::Block block = philox::token_group_bits(p.seed, p.draw_index, uint32_t(g));
            for (int j = 0; j < 4; ++j) {
                const int64_t i = 4 * g + j;
                if (i >= vocab) break;
                const float x = logits[i];
                if (isfinite(x)) consider(best, int32_t(i), x, block.w[j], max_logit, temperature);
            }
        }
        st.token = block_reduce(best, BestOp(), no_best(), sh.nucleus.reduce).index;
    } else if (drawn) {
        // TokenFilter::select: top-k keeps every token tied with the k-th largest logit.
        RadixSelection top_k{0, 0};  // selects everything
        if (p.top_k > 0)
            top_k = block_select_largest([&](int64_t i) { return uint64_t(ordered_bits(logits[i])) << 32; }, vocab,
                                         p.top_k, 32, sh.nucleus.radix);
        const bool top_p = (p.flags & kDrawTopP) != 0;
        const double max_d = double(max_logit);
        int bin_shift = 0;  // top-p: mass bins of the weights down to the lowest logit's
        if (top_p) {
            lowest = block_reduce(lowest, MinOp(), INFINITY, sh.nucleus.reduce);
            const double lowest_scaled = __ddiv_rn(__dsub_rn(double(lowest), max_d), p.filter_temperature);
            bin_shift = mass_bin_shift(exp(fmax(p.min_scaled, lowest_scaled)));
            for (int b = tid; b < kMassBins; b += kSamplingThreads) {
                sh.u.histogram.mass[b] = 0;
                sh.u.histogram.count[b] = 0;
            }
            __syncthreads();
        }
        double total = 0;
        int32_t count = 0;
        Best best = no_best();  // without top-p the candidates are the allowed set: draw among them now
        for (int64_t g = tid; g < num_groups; g += kSamplingThreads) {
            philox::Block block{};
            bool have_bits = false;
            for (int j = 0; j < 4; ++j) {
                const int64_t i = 4 * g + j;
                if (i >= vocab) break;
                const float x = logits[i];
                double weight;
                if (!candidate_weight(x, top_k, max_d, p, weight)) continue;
                total = __dadd_rn(total, weight);
                ++count;
                if (top_p) {
                    const int bin = mass_bin(weight, bin_shift);
                    atomicAdd(&sh.u.histogram.mass[bin], fixed_point(weight));
                    atomicAdd(&sh.u.histogram.count[bin], 1u);
                    continue;
                }
                if (!have_bits) {
                    block = philox::token_group_bits(p.seed, p.draw_index, uint32_t(g));
                    have_bits = true;
                }
                consider(best, int32_t(i), x, block.w[j], max_logit, temperature);
            }
        }
        total = block_reduce(total, DoubleSumOp(), 0.0, sh.nucleus.reduce);
        count = block_reduce(count, SumOp(), 0, sh.nucleus.reduce);
        best = block_reduce(best, BestOp(), no_best(), sh.nucleus.reduce);
        if (count > 0 && !top_p) st.token = best.index;
        if (count > 0 && top_p) {
            st.target = __dsub_rn(total, __dmul_rn(p.one_minus_top_p, total));
            if (tid == 0) {
                sh.plan = plan_nucleus(sh.u.histogram, st.target, total, count);
                sh.num_gathered = 0;
            }
            __syncthreads();
            const NucleusPlan plan = sh.plan;
            const bool in_shared = plan.num_in_range <= kSharedSortCapacity;
            const int64_t segment = int64_t(p.sort_slot) * vocab;
            uint32_t* keys = in_shared ? sh.sort_keys : a.sort_keys + segment;
            int32_t* ids = in_shared ? sh.sort_ids : a.sort_ids + segment;
            const int64_t capacity = in_shared ? kSharedSortCapacity : vocab;
            // The bins before the plan's are kept whole: their mass and their Gumbel-max now; the plan's bins are
            // gathered for the sort.
            double kept_mass = 0;
            Best kept_best = no_best();
            for (int64_t g = tid; g < num_groups; g += kSamplingThreads) {
                philox::Block block{};
                bool have_bits = false;
                for (int j = 0; j < 4; ++j) {
                    const int64_t i = 4 * g + j;
                    if (i >= vocab) break;
                    const float x = logits[i];
                    double weight;
                    if (!candidate_weight(x, top_k, max_d, p, weight)) continue;
                    const int bin = mass_bin(weight, bin_shift);
                    if (bin < plan.first_bin) {
                        kept_mass = __dadd_rn(kept_mass, weight);
                        if (!have_bits) {
                            block = philox::token_group_bits(p.seed, p.draw_index, uint32_t(g));
                            have_bits = true;
                        }
                        consider(kept_best, int32_t(i), x, block.w[j], max_logit, temperature);
                    } else if (bin <= plan.last_bin) {
                        const int pos = atomicAdd(&sh.num_gathered, 1);
                        if (pos < capacity) {
                            keys[pos] = ordered_bits(x);
                            ids[pos] = int32_t(i);
                        }
                    }
                }
            }
            kept_mass = block_reduce(kept_mass, DoubleSumOp(), 0.0, sh.nucleus.reduce);
            kept_best = block_reduce(kept_best, BestOp(), no_best(), sh.nucleus.reduce);
            const int32_t m = min(sh.num_gathered, int32_t(capacity));  // == plan.num_in_range
            const WeightOfBits weight_of{max_d, p.filter_temperature};
            if (in_shared) {
                uint32_t sort_keys[kSortItems];
                int32_t sort_ids[kSortItems];
                for (int j = 0; j < kSortItems; ++j) {
                    const int pos = tid * kSortItems + j;
                    sort_keys[j] = pos < m ? sh.sort_keys[pos] : 0u;  // 0: below every finite logit's bits
                    sort_ids[j] = pos < m ? sh.sort_ids[pos] : 0;
                }
                SharedSort(sh.u.sort).SortDescending(sort_keys, sort_ids);
                for (int j = 0; j < kSortItems; ++j) {
                    sh.sort_keys[tid * kSortItems + j] = sort_keys[j];
                    sh.sort_ids[tid * kSortItems + j] = sort_ids[j];
                }
                __syncthreads();
                const Best sorted_best =
                    draw_sorted_nucleus(sh.sort_keys, sh.sort_ids, m, kept_mass, st.target, weight_of, logits, p.seed,
                                        p.draw_index, max_logit, temperature, sh.nucleus);
                const Best drawn_best = better(kept_best, sorted_best);
                if (drawn_best.index != INT32_MAX) st.token = drawn_best.index;
            } else {
                st.kept_mass = kept_mass;
                st.best_value = kept_best.value;
                st.best_token = kept_best.index;
                st.num_sorted = m;
                st.pending = 1;
            }
        }
    }
    if (tid == 0) {
        if (p.sort_slot >= 0) {
            const int64_t begin = int64_t(p.sort_slot) * vocab;
            a.segment_begin[p.sort_slot] = int32_t(begin);
            a.segment_end[p.sort_slot] = int32_t(begin + (st.pending ? st.num_sorted : 0));
        }
        a.state[draw] = st;
    }
}

// One block per draw: the top-p draws whose cut's bins went to the device-wide sort, the sampled tokens' logprobs
// and ranks, and the tokens.
__global__ void __launch_bounds__(kSamplingThreads)
    finish_kernel(KernelArgs a, const uint32_t* sorted_keys, const int32_t* sorted_ids) {
    grid_dependency_wait();
    __shared__ NucleusShared sh;
    const int tid = int(threadIdx.x);
    const int draw = int(blockIdx.x);
    const DrawParams p = a.params[draw];
    const DrawState st = a.state[draw];
    int32_t token = st.token;
    if (st.pending) {
        const int64_t segment = int64_t(p.sort_slot) * a.vocab;
        const WeightOfBits weight_of{double(st.max_logit), p.filter_temperature};
        const Best sorted_best = draw_sorted_nucleus(sorted_keys + segment, sorted_ids + segment, st.num_sorted,
                                                     st.kept_mass, st.target, weight_of, sampled_row(a, p), p.seed,
                                                     p.draw_index, st.max_logit, p.gumbel_temperature, sh);
        const Best drawn_best = better({st.best_value, st.best_token}, sorted_best);
        if (drawn_best.index != INT32_MAX) token = drawn_best.index;
    }
    if (p.flags & kDrawLogprobs) {
        const float* raw = raw_row(a, p);
        const float token_key = order_key(raw[token]);
        long long rank = 0;  // 1-based: tokens whose logprob is >= the sampled one's
        for (int64_t i = tid; i < a.vocab; i += kSamplingThreads) rank += order_key(raw[i]) >= token_key ? 1 : 0;
        rank = block_reduce(rank, SumOp(), 0LL, sh.reduce);
        if (tid == 0) {
            LogprobRecord* record = record_of(a, p);
            record->sampled_rank = rank;
            record->sampled_logprob = __double2float_rn(__dsub_rn(double(token_key), st.log_normalizer));
        }
    }
    if (tid == 0) reinterpret_cast<int32_t*>(a.results)[draw] = token;
}

}  // namespace sampling

size_t sampling_state_bytes(int64_t num_draws) { return size_t(num_draws) * sizeof(sampling::DrawState); }

size_t sort_temp_bytes(int64_t num_sort_slots, int64_t vocab) {
    TACO_CHECK(num_sort_slots * vocab <= INT_MAX);
    cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
    cub::DoubleBuffer<int32_t> ids(nullptr, nullptr);
    size_t bytes = 0;
    TACO_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, bytes, keys, ids, int(num_sort_slots * vocab), int(num_sort_slots), static_cast<int32_t*>(nullptr),
        static_cast<int32_t*>(nullptr), 0, 32));
    return bytes;
}

void sample_on_device(const SamplingStep& step, void* stream_ptr) {
    using namespace sampling;
    if (step.num_draws == 0) return;
    TACO_CHECK(step.vocab > 0 && int64_t(step.num_sort_slots) * step.vocab <= INT_MAX);
    const cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
    TACO_CUDA_CHECK(
        cudaMemcpyAsync(step.upload_device, step.upload_host, step.upload_bytes, cudaMemcpyHostToDevice, stream));

    KernelArgs a{};
    a.logits = step.logits;
    a.row_stride = step.logits_row_stride;
    a.vocab = step.vocab;
    a.params = static_cast<const DrawParams*>(step.upload_device);
    a.edits = reinterpret_cast<const EditEntry*>(static_cast<const unsigned char*>(step.upload_device) +
                                                 size_t(step.num_draws) * sizeof(DrawParams));
    a.processed = step.processed;
    a.state = static_cast<DrawState*>(step.state);
    a.sort_keys = step.sort_keys[0];
    a.sort_ids = step.sort_ids[0];
    a.segment_begin = step.segment_begin;
    a.segment_end = step.segment_end;
    a.results = static_cast<unsigned char*>(step.results_device);
    a.masks = reinterpret_cast<const uint32_t*>(static_cast<const unsigned char*>(step.upload_device) +
                                                size_t(step.num_draws) * sizeof(DrawParams) +
                                                size_t(step.num_edits) * sizeof(EditEntry));
    a.masked = step.masked;
    a.mask_words = step.mask_words;

    if (step.num_masks > 0) launch_kernel("mask_kernel", mask_kernel, step.num_draws, kSamplingThreads, 0, stream, a);
    launch_kernel("prepare_kernel", prepare_kernel, step.num_draws, kSamplingThreads, 0, stream, a);

    const uint32_t* sorted_keys = nullptr;
    const int32_t* sorted_ids = nullptr;
    if (step.num_sort_slots > 0) {
        cub::DoubleBuffer<uint32_t> keys(step.sort_keys[0], step.sort_keys[1]);
        cub::DoubleBuffer<int32_t> ids(step.sort_ids[0], step.sort_ids[1]);
        size_t temp_bytes = step.sort_temp_bytes;
        TACO_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
            step.sort_temp, temp_bytes, keys, ids, step.num_sort_slots * step.vocab, step.num_sort_slots,
            step.segment_begin, step.segment_end, 0, 32, stream));
        sorted_keys = keys.Current();
        sorted_ids = ids.Current();
    }

    launch_kernel("finish_kernel", finish_kernel, step.num_draws, kSamplingThreads, 0, stream, a, sorted_keys,
                  sorted_ids);
    TACO_CUDA_CHECK(
        cudaMemcpyAsync(step.results_host, step.results_device, step.results_bytes, cudaMemcpyDeviceToHost, stream));
    TACO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace taco::cuda
