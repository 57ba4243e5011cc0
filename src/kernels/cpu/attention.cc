// Rotary embedding, KV-cache writes and paged attention on the CPU: the reference the CUDA kernels are tested
// against. Each (query token, head) is computed from the cache alone with a fixed order over key positions,
// so a token's output does not depend on the rest of the batch, on chunking or on prefix reuse.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/dot_internal.h"

namespace taco::cpu {

void rotary_embedding(const ExecContext& ctx, const TensorView& x, const TensorView& positions,
                      const TensorView& table_offsets, const TensorView& cos_table, const TensorView& sin_table,
                      int rotary_dim, bool neox_style) {
    const int64_t num_heads = x.shape[1], head_dim = x.shape[2];
    const int half = rotary_dim / 2;
    const int32_t* pos = positions.as<int32_t>();
    const int32_t* offset = table_offsets.ndim > 0 ? table_offsets.as<int32_t>() : nullptr;
    for (int64_t t = 0; t < x.shape[0]; ++t) {
        const int64_t row = int64_t(pos[t]) + (offset != nullptr ? offset[t] : 0);
        TACO_CHECK_MSG(pos[t] >= 0 && row >= 0 && row < cos_table.shape[0],
                       "position {} (table row {}) outside the rotary table of {} rows", pos[t], row,
                       cos_table.shape[0]);
        const float* cos = cos_table.as<float>() + row * half;
        const float* sin = sin_table.as<float>() + row * half;
        for (int64_t h = 0; h < num_heads; ++h) {
            float* v = x.as<float>() + (t * num_heads + h) * head_dim;
            for (int i = 0; i < half; ++i) {
                // neox: pairs (i, i + half); GPT-J style: pairs (2i, 2i + 1).
                float* a = neox_style ? v + i : v + 2 * i;
                float* b = neox_style ? v + i + half : v + 2 * i + 1;
                float x1 = *a, x2 = *b;
                *a = x1 * cos[i] - x2 * sin[i];
                *b = x2 * cos[i] + x1 * sin[i];
            }
        }
    }
}

void write_kv_cache(const ExecContext& ctx, const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache) {
    const int64_t row = k.shape[1] * k.shape[2];
    const int64_t num_slots = k_cache.shape[0] * k_cache.shape[1];
    const int64_t* slots = slot_mapping.as<int64_t>();
    for (int64_t t = 0; t < k.shape[0]; ++t) {
        const int64_t slot = slots[t];
        if (slot < 0) continue;  // padding
        TACO_CHECK_MSG(slot < num_slots, "slot {} outside the cache of {} slots", slot, num_slots);
        std::copy_n(k.as<float>() + t * row, row, k_cache.as<float>() + slot * row);
        std::copy_n(v.as<float>() + t * row, row, v_cache.as<float>() + slot * row);
    }
}

namespace {

float alibi_bias(const ops::AttentionParams& params, const float* slopes, int64_t h, int64_t key, int64_t query) {
    if (!params.alibi_bf16_key_positions) return slopes[h] * float(key - query);
    const float key_bf16 = bf16_to_f32(f32_to_bf16(float(key)));
    return bf16_to_f32(f32_to_bf16(slopes[h] * key_bf16)) * params.scale;
}

}  // namespace

void paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const ops::AttentionMetadata& batch, const ops::AttentionParams& params, const TensorView& out) {
    const int64_t num_heads = q.shape[1], head_dim = q.shape[2];
    const int64_t block_size = k_cache.shape[1], num_kv_heads = k_cache.shape[2];
    const int64_t group = num_heads / num_kv_heads;
    const int64_t num_seqs = batch.seq_lens.shape[0], max_blocks = batch.block_tables.shape[1];
    const int32_t* query_start = batch.query_start.as<int32_t>();
    const int32_t* seq_lens = batch.seq_lens.as<int32_t>();
    const int32_t* positions = batch.positions.as<int32_t>();
    const int32_t* tables = batch.block_tables.as<int32_t>();
    const float* slopes = params.alibi_slopes.ndim > 0 ? params.alibi_slopes.as<float>() : nullptr;
    const int64_t num_tokens = query_start[num_seqs];  // the rest are padding
    TACO_CHECK_LE(num_tokens, q.shape[0]);

    ThreadPool::global().parallel_for(num_tokens * num_heads, 4, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> scores;  // grows once per thread, then reused
        for (int64_t task = begin; task < end; ++task) {
            const int64_t t = task / num_heads, h = task % num_heads, kv_h = h / group;
            // The sequence of token t: the last s with query_start[s] <= t.
            const int64_t s = std::upper_bound(query_start, query_start + num_seqs + 1, int32_t(t)) - query_start - 1;
            const int32_t* table = tables + s * max_blocks;
            const int64_t p = positions[t];
            TACO_CHECK_MSG(p >= 0 && p < seq_lens[s], "query position {} outside the sequence's {} keys", p,
                           seq_lens[s]);
            TACO_CHECK_MSG((p / block_size) < max_blocks, "position {} past the block table ({} blocks)", p,
                           max_blocks);
            const int64_t first = params.sliding_window > 0 ? std::max<int64_t>(0, p - params.sliding_window + 1) : 0;
            // The blocks this row reads (only those: blocks before the window are not its concern) must be in the
            // cache; an id outside it would read past the cache (ops.h: the CPU aborts, CUDA gives NaN rows).
            for (int64_t b = first / block_size; b <= p / block_size; ++b)
                TACO_CHECK_MSG(table[b] >= 0 && table[b] < k_cache.shape[0],
                               "block table entry {} of sequence {} is {}, outside the cache of {} blocks", b, s,
                               table[b], k_cache.shape[0]);
            const float* qv = q.as<float>() + (t * num_heads + h) * head_dim;
            auto slot_row = [&](const TensorView& cache, int64_t j) {
                int64_t slot = int64_t(table[j / block_size]) * block_size + j % block_size;
                return cache.as<float>() + (slot * num_kv_heads + kv_h) * head_dim;
            };
            if (scores.size() < size_t(p - first + 1)) scores.resize(size_t(p - first + 1));
            float max_score = -std::numeric_limits<float>::infinity();
            for (int64_t j = first; j <= p; ++j) {
                float sc = dot_f32(qv, slot_row(k_cache, j), head_dim) * params.scale;
                if (params.logit_softcap > 0) sc = params.logit_softcap * std::tanh(sc / params.logit_softcap);
                if (slopes != nullptr) sc += alibi_bias(params, slopes, h, j, p);
                scores[size_t(j - first)] = sc;
                max_score = std::max(max_score, sc);
            }
            float sum = 0;
            for (int64_t j = first; j <= p; ++j) {
                float& sc = scores[size_t(j - first)];
                sc = std::exp(sc - max_score);
                sum += sc;
            }
            float* o = out.as<float>() + (t * num_heads + h) * head_dim;
            std::fill_n(o, head_dim, 0.0f);
            for (int64_t j = first; j <= p; ++j) {
                const float w = scores[size_t(j - first)] / sum;
                const float* vv = slot_row(v_cache, j);
                for (int64_t d = 0; d < head_dim; ++d) o[d] += w * vv[d];
            }
        }
    });
}

}  // namespace taco::cpu
