// Rotary embedding, KV-cache writes and paged attention on the CPU: the reference the CUDA kernels are tested
// against. Each (query token, head) is computed from the cache alone with a fixed order over key positions,
// so a token's output does not depend on the rest of the batch, on chunking or on prefix reuse.
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/ops.h"

namespace taco::ops {

void rotary_embedding(const TensorView& x, const std::vector<int32_t>& positions, const TensorView& cos_table,
                      const TensorView& sin_table, int rotary_dim, bool neox_style) {
    TACO_CHECK(x.ndim == 3 && x.dtype == DType::kF32 && x.is_contiguous());
    TACO_CHECK_EQ(x.shape[0], int64_t(positions.size()));
    TACO_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= x.shape[2]);
    TACO_CHECK_EQ(cos_table.shape[1], int64_t(rotary_dim / 2));
    const int64_t num_heads = x.shape[1], head_dim = x.shape[2];
    const int half = rotary_dim / 2;
    for (size_t t = 0; t < positions.size(); ++t) {
        TACO_CHECK_MSG(positions[t] >= 0 && positions[t] < cos_table.shape[0], "position {} outside the table of {}",
                       positions[t], cos_table.shape[0]);
        const float* cos = cos_table.as<float>() + int64_t(positions[t]) * half;
        const float* sin = sin_table.as<float>() + int64_t(positions[t]) * half;
        for (int64_t h = 0; h < num_heads; ++h) {
            float* v = x.as<float>() + (int64_t(t) * num_heads + h) * head_dim;
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

void write_kv_cache(const TensorView& k, const TensorView& v, const std::vector<int64_t>& slot_mapping,
                    const TensorView& k_cache, const TensorView& v_cache) {
    TACO_CHECK(k.ndim == 3 && v.ndim == 3 && k_cache.ndim == 4 && v_cache.ndim == 4);
    TACO_CHECK(k.dtype == DType::kF32 && k_cache.dtype == DType::kF32 && v_cache.dtype == DType::kF32);
    TACO_CHECK_EQ(k.shape[0], int64_t(slot_mapping.size()));
    TACO_CHECK_EQ(k.shape[1], k_cache.shape[2]);
    TACO_CHECK_EQ(k.shape[2], k_cache.shape[3]);
    const int64_t row = k.shape[1] * k.shape[2];
    const int64_t num_slots = k_cache.shape[0] * k_cache.shape[1];
    for (size_t t = 0; t < slot_mapping.size(); ++t) {
        int64_t slot = slot_mapping[t];
        TACO_CHECK_MSG(slot >= 0 && slot < num_slots, "slot {} outside the cache of {} slots", slot, num_slots);
        std::copy_n(k.as<float>() + int64_t(t) * row, row, k_cache.as<float>() + slot * row);
        std::copy_n(v.as<float>() + int64_t(t) * row, row, v_cache.as<float>() + slot * row);
    }
}

namespace {

float alibi_bias(const AttentionParams& params, int64_t h, int64_t key, int64_t query) {
    if (!params.alibi_bf16_key_positions) return params.alibi_slopes[h] * float(key - query);
    const float key_bf16 = bf16_to_f32(f32_to_bf16(float(key)));
    return bf16_to_f32(f32_to_bf16(params.alibi_slopes[h] * key_bf16)) * params.scale;
}

}  // namespace

void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionBatch& batch, const AttentionParams& params, const TensorView& out) {
    TACO_CHECK(q.ndim == 3 && out.ndim == 3 && k_cache.ndim == 4);
    TACO_CHECK(q.dtype == DType::kF32 && out.dtype == DType::kF32 && k_cache.dtype == DType::kF32);
    const int64_t num_tokens = q.shape[0], num_heads = q.shape[1], head_dim = q.shape[2];
    const int64_t block_size = k_cache.shape[1], num_kv_heads = k_cache.shape[2];
    TACO_CHECK_EQ(k_cache.shape[3], head_dim);
    TACO_CHECK_EQ(num_heads % num_kv_heads, int64_t(0));
    TACO_CHECK_EQ(int64_t(batch.positions.size()), num_tokens);
    TACO_CHECK_EQ(batch.query_start.size(), batch.block_tables.size() + 1);
    TACO_CHECK_EQ(int64_t(batch.query_start.back()), num_tokens);
    const int64_t group = num_heads / num_kv_heads;

    std::vector<int32_t> seq_of_token(static_cast<size_t>(num_tokens));
    for (size_t s = 0; s + 1 < batch.query_start.size(); ++s)
        for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) seq_of_token[size_t(t)] = int32_t(s);

    ThreadPool::global().parallel_for(num_tokens * num_heads, 4, [&](int64_t begin, int64_t end) {
        std::vector<float> scores;
        for (int64_t task = begin; task < end; ++task) {
            const int64_t t = task / num_heads, h = task % num_heads, kv_h = h / group;
            const auto& table = batch.block_tables[size_t(seq_of_token[size_t(t)])];
            const int64_t p = batch.positions[size_t(t)];
            const int64_t first = params.sliding_window > 0 ? std::max<int64_t>(0, p - params.sliding_window + 1) : 0;
            TACO_CHECK_MSG((p / block_size) < int64_t(table.size()), "position {} past the block table ({} blocks)", p,
                           table.size());
            const float* qv = q.as<float>() + (t * num_heads + h) * head_dim;
            auto slot_row = [&](const TensorView& cache, int64_t j) {
                int64_t slot = int64_t(table[size_t(j / block_size)]) * block_size + j % block_size;
                return cache.as<float>() + (slot * num_kv_heads + kv_h) * head_dim;
            };
            scores.resize(size_t(p - first + 1));
            float max_score = -std::numeric_limits<float>::infinity();
            for (int64_t j = first; j <= p; ++j) {
                float s = cpu::dot_f32(qv, slot_row(k_cache, j), head_dim) * params.scale;
                if (params.logit_softcap > 0) s = params.logit_softcap * std::tanh(s / params.logit_softcap);
                if (params.alibi_slopes != nullptr) s += alibi_bias(params, h, j, p);
                scores[size_t(j - first)] = s;
                max_score = std::max(max_score, s);
            }
            float sum = 0;
            for (float& s : scores) {
                s = std::exp(s - max_score);
                sum += s;
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

}  // namespace taco::ops
