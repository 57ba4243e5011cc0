// Attention ops of the scalar reference (reference_ops.h): rotary embedding, paged KV writes and causal paged
// attention over the KV layout of ARCHITECTURE.md, in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "reference_ops.h"

namespace taco::ref {

Values rotary_embedding(const TensorView& x, const TensorView& positions, const TensorView& table_offsets,
                        const TensorView& cos_table, const TensorView& sin_table, int rotary_dim, bool neox_style) {
    const int64_t tokens = x.shape[0], heads = x.shape[1], head_dim = x.shape[2], half = rotary_dim / 2;
    Values out = values_of(x);
    for (int64_t t = 0; t < tokens; ++t) {
        const int64_t row = index_at(positions, t) + (table_offsets.ndim > 0 ? index_at(table_offsets, t) : 0);
        TACO_CHECK(row >= 0 && row < cos_table.shape[0]);
        for (int64_t h = 0; h < heads; ++h) {
            double* v = out.data() + (t * heads + h) * head_dim;
            for (int64_t i = 0; i < half; ++i) {
                // The pair rotated by angle i: halves (i, i + half) in neox style, neighbours (2i, 2i + 1) otherwise.
                const int64_t a = neox_style ? i : 2 * i, b = neox_style ? i + half : 2 * i + 1;
                const double c = value_at(cos_table, row * half + i), s = value_at(sin_table, row * half + i);
                const double x1 = v[a], x2 = v[b];
                v[a] = x1 * c - x2 * s;
                v[b] = x2 * c + x1 * s;
            }
        }
    }
    return out;
}

KvCache write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                       const TensorView& k_cache, const TensorView& v_cache) {
    const int64_t row = k.shape[1] * k.shape[2], num_slots = k_cache.shape[0] * k_cache.shape[1];
    KvCache out{values_of(k_cache), values_of(v_cache)};
    for (int64_t t = 0; t < k.shape[0]; ++t) {
        const int64_t slot = index_at(slot_mapping, t);
        if (slot == -1) continue;
        TACO_CHECK(slot >= 0 && slot < num_slots);
        for (int64_t i = 0; i < row; ++i) {
            out.k[size_t(slot * row + i)] = value_at(k, t * row + i);
            out.v[size_t(slot * row + i)] = value_at(v, t * row + i);
        }
    }
    return out;
}

namespace {

// Score bias of ALiBi for head h, key position j and query position p, and whether it goes inside the scale.
double alibi_bias(const ops::AttentionParams& params, int64_t h, int64_t j, int64_t p) {
    const double slope = value_at(params.alibi_slopes, h);
    if (!params.alibi_bf16_key_positions) return slope * double(j - p);
    // transformers' Falcon: bf16(slope * bf16(j)), the product taken in fp32 as torch does for bf16 tensors.
    return round_to_bf16(double(float(slope) * float(round_to_bf16(double(j)))));
}

}  // namespace

Values paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                       const ops::AttentionMetadata& batch, const ops::AttentionParams& params,
                       const TensorView& out_before) {
    const int64_t heads = q.shape[1], head_dim = q.shape[2];
    const int64_t block_size = k_cache.shape[1], kv_heads = k_cache.shape[2], group = heads / kv_heads;
    const int64_t num_seqs = batch.seq_lens.shape[0], max_blocks = batch.block_tables.shape[1];
    const bool alibi = params.alibi_slopes.ndim > 0;
    Values out = values_of(out_before);  // padding rows stay as they were
    // Element d of the kv head's row at key position j of sequence s: the paged layout.
    auto cached = [&](const TensorView& cache, int64_t s, int64_t j, int64_t kv_h, int64_t d) {
        TACO_CHECK(j / block_size < max_blocks);
        const int64_t block = index_at(batch.block_tables, s * max_blocks + j / block_size);
        TACO_CHECK(block >= 0 && block < cache.shape[0]);
        return value_at(cache, ((block * block_size + j % block_size) * kv_heads + kv_h) * head_dim + d);
    };
    for (int64_t s = 0; s < num_seqs; ++s) {
        for (int64_t t = index_at(batch.query_start, s); t < index_at(batch.query_start, s + 1); ++t) {
            const int64_t p = index_at(batch.positions, t);
            TACO_CHECK(p >= 0 && p < index_at(batch.seq_lens, s));
            const int64_t first = params.sliding_window > 0 ? std::max<int64_t>(0, p - params.sliding_window + 1) : 0;
            for (int64_t h = 0; h < heads; ++h) {
                const int64_t kv_h = h / group;
                Values scores;
                double max_score = -std::numeric_limits<double>::infinity();
                for (int64_t j = first; j <= p; ++j) {
                    double qk = 0;
                    for (int64_t d = 0; d < head_dim; ++d)
                        qk += value_at(q, (t * heads + h) * head_dim + d) * cached(k_cache, s, j, kv_h, d);
                    double score = alibi && params.alibi_bf16_key_positions
                                       ? (qk + alibi_bias(params, h, j, p)) * params.scale
                                       : qk * params.scale;
                    if (params.logit_softcap > 0)
                        score = params.logit_softcap * std::tanh(score / params.logit_softcap);
                    if (alibi && !params.alibi_bf16_key_positions) score += alibi_bias(params, h, j, p);
                    scores.push_back(score);
                    max_score = std::max(max_score, score);
                }
                double sum = 0;
                for (double& score : scores) sum += (score = std::exp(score - max_score));
                for (int64_t d = 0; d < head_dim; ++d) {
                    double o = 0;
                    for (int64_t j = first; j <= p; ++j)
                        o += scores[size_t(j - first)] / sum * cached(v_cache, s, j, kv_h, d);
                    out[size_t((t * heads + h) * head_dim + d)] = o;
                }
            }
        }
    }
    return out;
}

}  // namespace taco::ref
