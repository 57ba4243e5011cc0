// paged_attention with ALiBi slopes (kernels/ops.h) against a plain scalar softmax(q.k * scale + slope * (j - p))
// reference, and the bias of a token not depending on the rest of the batch.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/ops.h"

namespace taco::ops {
namespace {

constexpr int64_t kHeads = 4, kKvHeads = 2, kHeadDim = 8, kBlockSize = 4;

void fill_random(const TensorView& t, std::mt19937& rng) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = dist(rng);
}

// One sequence of `len` tokens laid out over blocks 3, 1, 0, 2, ... of a cache; all its queries at once.
struct Sequence {
    int64_t len;
    Tensor q, k, v;  // [len, heads | kv_heads, head_dim]
};

Sequence random_sequence(int64_t len, uint32_t seed) {
    std::mt19937 rng(seed);
    Sequence s{len, Tensor::empty({len, kHeads, kHeadDim}, DType::kF32),
               Tensor::empty({len, kKvHeads, kHeadDim}, DType::kF32),
               Tensor::empty({len, kKvHeads, kHeadDim}, DType::kF32)};
    fill_random(s.q, rng);
    fill_random(s.k, rng);
    fill_random(s.v, rng);
    return s;
}

// Runs the given sequences as one batch; returns each sequence's output [len, heads, head_dim] flattened.
std::vector<std::vector<float>> run(const std::vector<const Sequence*>& seqs, const AttentionParams& params) {
    int64_t total = 0, blocks = 0;
    for (const auto* s : seqs) {
        total += s->len;
        blocks += (s->len + kBlockSize - 1) / kBlockSize;
    }
    Tensor k_cache = Tensor::zeros({blocks, kBlockSize, kKvHeads, kHeadDim}, DType::kF32);
    Tensor v_cache = Tensor::zeros({blocks, kBlockSize, kKvHeads, kHeadDim}, DType::kF32);
    Tensor q = Tensor::empty({total, kHeads, kHeadDim}, DType::kF32);
    Tensor k = Tensor::empty({total, kKvHeads, kHeadDim}, DType::kF32);
    Tensor v = Tensor::empty({total, kKvHeads, kHeadDim}, DType::kF32);
    std::vector<int32_t> query_start = {0}, seq_lens, positions, tables;
    std::vector<int64_t> slots;
    const int64_t max_blocks = blocks;
    int64_t next_block = blocks - 1, row = 0;
    for (const auto* s : seqs) {
        std::vector<int32_t> table;
        for (int64_t b = 0; b < (s->len + kBlockSize - 1) / kBlockSize; ++b) table.push_back(int32_t(next_block--));
        for (int64_t i = 0; i < s->len; ++i, ++row) {
            positions.push_back(int32_t(i));
            slots.push_back(int64_t(table[size_t(i / kBlockSize)]) * kBlockSize + i % kBlockSize);
        }
        std::memcpy(q.as<float>() + (row - s->len) * kHeads * kHeadDim, s->q.as<float>(), s->q.view().nbytes());
        std::memcpy(k.as<float>() + (row - s->len) * kKvHeads * kHeadDim, s->k.as<float>(), s->k.view().nbytes());
        std::memcpy(v.as<float>() + (row - s->len) * kKvHeads * kHeadDim, s->v.as<float>(), s->v.view().nbytes());
        table.resize(size_t(max_blocks), 0);
        tables.insert(tables.end(), table.begin(), table.end());
        query_start.push_back(int32_t(row));
        seq_lens.push_back(int32_t(s->len));
    }
    const auto num_seqs = int64_t(seqs.size());
    AttentionMetadata batch;
    batch.query_start = TensorView(query_start.data(), DType::kI32, {num_seqs + 1});
    batch.seq_lens = TensorView(seq_lens.data(), DType::kI32, {num_seqs});
    batch.positions = TensorView(positions.data(), DType::kI32, {total});
    batch.block_tables = TensorView(tables.data(), DType::kI32, {num_seqs, max_blocks});
    const ExecContext ctx = ExecContext::cpu();
    write_kv_cache(ctx, k, v, TensorView(slots.data(), DType::kI64, {total}), k_cache, v_cache);
    Tensor out = Tensor::empty({total, kHeads, kHeadDim}, DType::kF32);
    paged_attention(ctx, q, k_cache, v_cache, batch, params, out);
    std::vector<std::vector<float>> result;
    const float* o = out.as<float>();
    for (const auto* s : seqs) {
        result.emplace_back(o, o + s->len * kHeads * kHeadDim);
        o += s->len * kHeads * kHeadDim;
    }
    return result;
}

// out[p, h] = softmax_j(q.k * scale + bias(h, j, p)) . v, in doubles.
template <class Bias>
void expect_reference(const Sequence& s, const AttentionParams& params, const std::vector<float>& out, Bias bias) {
    for (int64_t p = 0; p < s.len; ++p) {
        for (int64_t h = 0; h < kHeads; ++h) {
            const int64_t kv_h = h / (kHeads / kKvHeads);
            std::vector<double> w(size_t(p + 1));
            double max_w = -1e30, sum = 0;
            for (int64_t j = 0; j <= p; ++j) {
                double dot = 0;
                for (int64_t d = 0; d < kHeadDim; ++d)
                    dot += double(s.q.as<float>()[(p * kHeads + h) * kHeadDim + d]) *
                           s.k.as<float>()[(j * kKvHeads + kv_h) * kHeadDim + d];
                w[size_t(j)] = dot * params.scale + bias(h, j, p);
                max_w = std::max(max_w, w[size_t(j)]);
            }
            for (double& x : w) sum += (x = std::exp(x - max_w));
            for (int64_t d = 0; d < kHeadDim; ++d) {
                double expected = 0;
                for (int64_t j = 0; j <= p; ++j)
                    expected += w[size_t(j)] / sum * s.v.as<float>()[(j * kKvHeads + kv_h) * kHeadDim + d];
                EXPECT_NEAR(out[size_t((p * kHeads + h) * kHeadDim + d)], expected, 1e-5)
                    << "position " << p << " head " << h << " dim " << d;
            }
        }
    }
}

TEST(AlibiAttention, MatchesScalarSoftmaxWithLinearBiasPerHead) {
    const Sequence s = random_sequence(11, 7);
    const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    AttentionParams params;
    params.scale = 0.35f;
    params.alibi_slopes = TensorView(const_cast<float*>(slopes.data()), DType::kF32, {kHeads});
    const auto out = run({&s}, params)[0];
    expect_reference(s, params, out,
                     [&](int64_t h, int64_t j, int64_t p) { return double(slopes[size_t(h)]) * double(j - p); });
}

double round_bf16(double x) { return double(bf16_to_f32(f32_to_bf16(float(x)))); }

TEST(AlibiAttention, FalconModeRoundsSlopeTimesKeyPositionToBf16AndScalesIt) {
    // Past 256 positions the key position itself rounds in bfloat16 (257 -> 256), and slope * key keeps 8 bits.
    const Sequence s = random_sequence(300, 5);
    const std::vector<float> slopes = {0.70703125f, 0.5f, 0.353515625f, 0.25f};  // bf16 values of 2^(-k/2)
    AttentionParams params;
    params.scale = 0.35f;
    params.alibi_slopes = TensorView(const_cast<float*>(slopes.data()), DType::kF32, {kHeads});
    params.alibi_bf16_key_positions = true;
    const auto out = run({&s}, params)[0];
    expect_reference(s, params, out, [&](int64_t h, int64_t j, int64_t) {
        return round_bf16(double(slopes[size_t(h)]) * round_bf16(double(j))) * params.scale;
    });
}

TEST(AlibiAttention, SlopesChangeTheOutputOnlyWhenGiven) {
    const Sequence s = random_sequence(9, 3);
    const std::vector<float> slopes = {1.0f, 1.0f, 1.0f, 1.0f};
    AttentionParams plain;
    plain.scale = 0.35f;
    AttentionParams alibi = plain;
    alibi.alibi_slopes = TensorView(const_cast<float*>(slopes.data()), DType::kF32, {kHeads});
    const auto a = run({&s}, plain)[0];
    const auto b = run({&s}, alibi)[0];
    // The first token attends to itself only: identical; later tokens differ.
    for (int64_t i = 0; i < kHeads * kHeadDim; ++i) EXPECT_EQ(a[size_t(i)], b[size_t(i)]);
    EXPECT_NE(a, b);
}

TEST(AlibiAttention, OutputIsBitwiseTheSameAloneAndInABatch) {
    const Sequence a = random_sequence(13, 11), b = random_sequence(6, 12), c = random_sequence(17, 13);
    const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    AttentionParams params;
    params.scale = 0.35f;
    params.alibi_slopes = TensorView(const_cast<float*>(slopes.data()), DType::kF32, {kHeads});
    const auto alone = run({&a}, params)[0];
    const auto batched = run({&b, &a, &c}, params);
    ASSERT_EQ(alone.size(), batched[1].size());
    EXPECT_EQ(std::memcmp(alone.data(), batched[1].data(), alone.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace taco::ops
