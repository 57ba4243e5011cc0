// Batch invariance at the op level (ARCHITECTURE.md, "Parity rule"): a row's output has the same bits computed
// alone or among other rows, for matmul (every weight dtype), the norms, paged attention (in a batch, as a chunk
// after a cached prefix, as a decode row, over other physical blocks) and the MoE chain ending in moe_combine.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "parity_harness.h"

namespace taco::parity {
namespace {

class OpsBatchInvariance : public testing::TestWithParam<BackendMaker> {
protected:
    OpsBatchInvariance() : backend_(GetParam().make()), run_(backend_, backend_.name + " batch invariance", 0, 1234) {}
    void SetUp() override {
        if (!backend_.unavailable.empty()) GTEST_SKIP() << backend_.name << ": " << backend_.unavailable;
    }

    // Whether row `row` of `a` (rows of row_bytes) has the bits of row `other_row` of `b`.
    bool same_row(const TensorView& a, int64_t row, const TensorView& b, int64_t other_row) {
        Tensor ha = run_.host_copy(a), hb = run_.host_copy(b);
        const size_t row_bytes = ha.view().nbytes() / size_t(a.shape[0]);
        return std::memcmp(static_cast<uint8_t*>(ha.view().data) + size_t(row) * row_bytes,
                           static_cast<uint8_t*>(hb.view().data) + size_t(other_row) * row_bytes, row_bytes) == 0;
    }

    ParityBackend backend_;
    ParityRun run_;
};

// The CPU: every weight dtype and any number of rows. CUDA takes weights in the activation dtype, and what it
// guarantees is narrower (kernels/cuda/skinny_gemm.h, gemm_plan_cache.h): f16 / bf16 rows have the same bits alone
// or in a batch of up to 16 rows (the skinny kernel); cuBLASLt's plans (f32, more rows) are fixed per M, so a row
// may differ in its last bits across M, and that is not asserted.
TEST_P(OpsBatchInvariance, MatmulRowAloneEqualsTheRowInABatch) {
    ParityRun& r = run_;
    const bool cuda = r.ctx().device == Device::kCuda;
    if (cuda && r.act() == DType::kF32) GTEST_SKIP() << "f32 on CUDA runs cuBLASLt, whose row bits depend on M";
    const std::vector<DType> w_dtypes =
        cuda ? std::vector<DType>{r.act()} : std::vector<DType>{DType::kF32, DType::kF16, DType::kBF16};
    for (DType w_dtype : w_dtypes) {
        const int64_t m = cuda ? 16 : 37, n = 23, k = cuda ? 264 : 257;  // CUDA: the skinny kernel's rows and K
        TensorView x = r.host_act({m, k});
        TensorView w = r.device(r.host_random({n, k}, w_dtype, -1, 1));
        TensorView bias = r.device(r.host_random({n}, DType::kF32, -1, 1));
        TensorView y = r.device_output({m, n}, r.act());
        ops::matmul(r.ctx(), r.device(x), w, &bias, y);
        for (int64_t i = 0; i < m; ++i) {
            TensorView y_row = r.device_output({1, n}, r.act());
            ops::matmul(r.ctx(), r.device(x.rows(i, i + 1)), w, &bias, y_row);
            EXPECT_TRUE(same_row(y, i, y_row, 0)) << dtype_name(w_dtype) << " row " << i;
        }
        // Rows 5..12 as a batch of their own: another tiling of the same rows.
        TensorView y_some = r.device_output({8, n}, r.act());
        ops::matmul(r.ctx(), r.device(x.rows(5, 13)), w, &bias, y_some);
        for (int64_t i = 0; i < 8; ++i) EXPECT_TRUE(same_row(y, 5 + i, y_some, i)) << dtype_name(w_dtype) << " " << i;
    }
}

TEST_P(OpsBatchInvariance, NormRowAloneEqualsTheRowInABatch) {
    ParityRun& r = run_;
    const int64_t rows = 33, hidden = 200;
    TensorView x = r.host_act({rows, hidden}, -3, 5);
    TensorView w = r.device(r.host_random({hidden}, DType::kF32, -1, 1));
    TensorView b = r.device(r.host_random({hidden}, DType::kF32, -1, 1));
    TensorView rms = r.device_output({rows, hidden}, r.act()), ln = r.device_output({rows, hidden}, r.act());
    ops::rms_norm(r.ctx(), r.device(x), w, 1e-6f, 1.0f, rms);
    ops::layer_norm(r.ctx(), r.device(x), w, &b, 1e-5f, ln);
    for (int64_t i = 0; i < rows; ++i) {
        TensorView rms_row = r.device_output({1, hidden}, r.act()), ln_row = r.device_output({1, hidden}, r.act());
        ops::rms_norm(r.ctx(), r.device(x.rows(i, i + 1)), w, 1e-6f, 1.0f, rms_row);
        ops::layer_norm(r.ctx(), r.device(x.rows(i, i + 1)), w, &b, 1e-5f, ln_row);
        EXPECT_TRUE(same_row(rms, i, rms_row, 0)) << "rms_norm row " << i;
        EXPECT_TRUE(same_row(ln, i, ln_row, 0)) << "layer_norm row " << i;
    }
    // Per-head LayerNorm: a token alone against the same token among others.
    TensorView heads = r.host_act({6, 4, 24}, -2, 4);
    TensorView hw = r.device(r.host_random({4, 24}, DType::kF32, -1, 1));
    TensorView all = r.device(heads), one = r.device(heads.rows(3, 4));
    ops::per_head_layer_norm(r.ctx(), all, hw, nullptr, 1e-5f);
    ops::per_head_layer_norm(r.ctx(), one, hw, nullptr, 1e-5f);
    EXPECT_TRUE(same_row(all, 3, one, 0));
}

// The fused ops (one launch on the GPU) have the bits of the ops they fuse, and a norm row of the vector build
// (hidden 4096) has its bits alone and in a batch.
TEST_P(OpsBatchInvariance, FusedOpsHaveTheBitsOfTheirParts) {
    ParityRun& r = run_;
    for (int64_t hidden : {100, 200, 255, 4096, 8200}) {
        const int64_t rows = 5;
        TensorView x = r.host_act({rows, hidden}, -3, 3), y = r.host_act({rows, hidden}, -1, 1);
        TensorView w = r.device(r.host_random({hidden}, DType::kF32, -1, 1));
        TensorView fused_x = r.device(x), parts_x = r.device(x), dy = r.device(y);
        TensorView fused = r.device_output({rows, hidden}, r.act()), parts = r.device_output({rows, hidden}, r.act());
        ops::add_rms_norm(r.ctx(), fused_x, dy, w, 1e-6f, 0.0f, fused);
        ops::add_inplace(r.ctx(), parts_x, dy);
        ops::rms_norm(r.ctx(), parts_x, w, 1e-6f, 0.0f, parts);
        for (int64_t i = 0; i < rows; ++i) {
            EXPECT_TRUE(same_row(fused_x, i, parts_x, i)) << "add_rms_norm x, hidden " << hidden << " row " << i;
            EXPECT_TRUE(same_row(fused, i, parts, i)) << "add_rms_norm out, hidden " << hidden << " row " << i;
            TensorView alone = r.device_output({1, hidden}, r.act());
            ops::rms_norm(r.ctx(), parts_x.rows(i, i + 1), w, 1e-6f, 0.0f, alone);
            EXPECT_TRUE(same_row(parts, i, alone, 0)) << "rms_norm alone, hidden " << hidden << " row " << i;
        }
    }
    for (bool neox : {true, false}) {
        const int64_t tokens = 4, heads = 8, kv_heads = 2, dim = 96, positions = 32, block_size = 8;
        const int rotary_dim = 64, half = rotary_dim / 2;
        std::vector<double> cos_values, sin_values;
        for (int64_t p = 0; p < positions; ++p) {
            for (int i = 0; i < half; ++i) {
                const double angle = double(p) * std::pow(10000.0, -2.0 * i / rotary_dim);
                cos_values.push_back(std::cos(angle));
                sin_values.push_back(std::sin(angle));
            }
        }
        TensorView cos = r.device(r.host_values({positions, half}, DType::kF32, cos_values));
        TensorView sin = r.device(r.host_values({positions, half}, DType::kF32, sin_values));
        TensorView pos = r.device(r.host_i32({tokens}, {0, 7, 31, 12}));
        TensorView slots = r.device(r.host_i64({tokens}, {5, -1, 17, 2}));
        TensorView q = r.host_act({tokens, heads, dim}, -2, 2), k = r.host_act({tokens, kv_heads, dim}, -2, 2);
        TensorView v = r.device(r.host_act({tokens, kv_heads, dim}, -2, 2));
        TensorView cache = r.host_act({3, block_size, kv_heads, dim});
        TensorView fq = r.device(q), fk = r.device(k), fkc = r.device(cache), fvc = r.device(cache);
        TensorView pq = r.device(q), pk = r.device(k), pkc = r.device(cache), pvc = r.device(cache);
        ops::rotary_write_kv(r.ctx(), fq, fk, v, pos, TensorView(), cos, sin, rotary_dim, neox, slots, fkc, fvc);
        ops::rotary_embedding(r.ctx(), pq, pos, TensorView(), cos, sin, rotary_dim, neox);
        ops::rotary_embedding(r.ctx(), pk, pos, TensorView(), cos, sin, rotary_dim, neox);
        ops::write_kv_cache(r.ctx(), pk, v, slots, pkc, pvc);
        for (int64_t t = 0; t < tokens; ++t) {
            EXPECT_TRUE(same_row(fq, t, pq, t)) << "q, neox " << neox << " token " << t;
            EXPECT_TRUE(same_row(fk, t, pk, t)) << "k, neox " << neox << " token " << t;
        }
        for (int64_t b = 0; b < 3; ++b) {
            EXPECT_TRUE(same_row(fkc, b, pkc, b)) << "k cache, neox " << neox << " block " << b;
            EXPECT_TRUE(same_row(fvc, b, pvc, b)) << "v cache, neox " << neox << " block " << b;
        }
    }
}

// Sequences of given K, V and queries ([len, heads | kv_heads, D] each), cached and attended in several layouts.
struct Sequence {
    int64_t len;
    TensorView q, k, v;  // host
};

constexpr int64_t kHeads = 4, kKvHeads = 2, kHeadDim = 80, kBlockSize = 16;

// Writes every sequence's K/V into a cache (through write_kv_cache, blocks in a shuffled order that depends on
// `layout_seed`), then runs the queries at positions [first[s], len) of each as one batch; returns the output
// [tokens, heads, D] on the device, sequence after sequence.
TensorView attend(ParityRun& r, const std::vector<const Sequence*>& seqs, const std::vector<int64_t>& first,
                  uint32_t layout_seed) {
    const auto num_seqs = int64_t(seqs.size());
    int64_t num_blocks = 2, max_blocks = 1, tokens = 0, cached = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        const int64_t used = (seqs[s]->len + kBlockSize - 1) / kBlockSize;
        num_blocks += used;
        max_blocks = std::max(max_blocks, used);
        tokens += seqs[s]->len - first[s];
        cached += seqs[s]->len;
    }
    std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::mt19937 layout(layout_seed);
    std::shuffle(blocks.begin(), blocks.end(), layout);
    std::vector<int32_t> query_start = {0}, seq_lens, positions, tables;
    std::vector<int64_t> slots;
    ref::Values q, k, v;
    size_t next = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        const Sequence& seq = *seqs[s];
        const size_t table_begin = tables.size();
        for (int64_t b = 0; b < max_blocks; ++b)
            tables.push_back(b * kBlockSize < seq.len ? blocks[next++] : blocks.back());
        for (int64_t p = 0; p < seq.len; ++p)
            slots.push_back(int64_t(tables[table_begin + size_t(p / kBlockSize)]) * kBlockSize + p % kBlockSize);
        const ref::Values sq = ref::values_of(seq.q), sk = ref::values_of(seq.k), sv = ref::values_of(seq.v);
        q.insert(q.end(), sq.begin() + first[s] * kHeads * kHeadDim, sq.end());
        k.insert(k.end(), sk.begin(), sk.end());
        v.insert(v.end(), sv.begin(), sv.end());
        for (int64_t p = first[s]; p < seq.len; ++p) positions.push_back(int32_t(p));
        query_start.push_back(int32_t(positions.size()));
        seq_lens.push_back(int32_t(seq.len));
    }
    TensorView k_cache = r.device(r.host_act({num_blocks, kBlockSize, kKvHeads, kHeadDim}));
    TensorView v_cache = r.device(r.host_act({num_blocks, kBlockSize, kKvHeads, kHeadDim}));
    ops::write_kv_cache(r.ctx(), r.device(r.host_values({cached, kKvHeads, kHeadDim}, r.act(), k)),
                        r.device(r.host_values({cached, kKvHeads, kHeadDim}, r.act(), v)),
                        r.device(r.host_i64({cached}, slots)), k_cache, v_cache);
    ops::AttentionMetadata batch;
    batch.query_start = r.device(r.host_i32({num_seqs + 1}, query_start));
    batch.seq_lens = r.device(r.host_i32({num_seqs}, seq_lens));
    batch.positions = r.device(r.host_i32({tokens}, positions));
    batch.block_tables = r.device(r.host_i32({num_seqs, max_blocks}, tables));
    // The step's bounds, as the batch builder sets them (CUDA sizes its launch from them).
    for (size_t s = 0; s < seqs.size(); ++s) {
        batch.max_query_len = std::max(batch.max_query_len, int32_t(seqs[s]->len - first[s]));
        batch.max_seq_len = std::max(batch.max_seq_len, int32_t(seqs[s]->len));
    }
    ops::AttentionParams params;
    params.scale = 0.11f;
    params.sliding_window = 40;
    TensorView out = r.device_output({tokens, kHeads, kHeadDim}, r.act());
    ops::paged_attention(r.ctx(), r.device(r.host_values({tokens, kHeads, kHeadDim}, r.act(), q)), k_cache, v_cache,
                         batch, params, out);
    return out;
}

TEST_P(OpsBatchInvariance, AttentionRowIsTheSameAloneBatchedChunkedAndAsADecodeRow) {
    ParityRun& r = run_;
    auto make = [&](int64_t len) {
        return Sequence{len, r.host_act({len, kHeads, kHeadDim}, -3, 3), r.host_act({len, kKvHeads, kHeadDim}),
                        r.host_act({len, kKvHeads, kHeadDim})};
    };
    const Sequence a = make(53), b = make(7), c = make(30);
    const TensorView alone = attend(r, {&a}, {0}, 1);
    // B's 7 rows come first, then A's 53.
    const TensorView batched = attend(r, {&b, &a, &c}, {0, 0, 0}, 2);
    // A's last 20 rows as a chunk after 33 cached tokens, beside decode rows of B and C.
    const TensorView chunked = attend(r, {&c, &a, &b}, {29, 33, 6}, 3);
    // A's last row as a decode row.
    const TensorView decode = attend(r, {&a}, {52}, 4);
    for (int64_t p = 0; p < a.len; ++p) {
        EXPECT_TRUE(same_row(alone, p, batched, 7 + p)) << "in a batch, position " << p;
        if (p >= 33) {
            EXPECT_TRUE(same_row(alone, p, chunked, 1 + p - 33)) << "as a chunk, position " << p;
        }
    }
    EXPECT_TRUE(same_row(alone, 52, decode, 0)) << "as a decode row";
    EXPECT_TRUE(same_row(batched, 7 + 53 + 29, chunked, 0)) << "C's decode row";
}

// route -> align -> gather -> grouped gate/up (halves of one stack) -> activation -> grouped down -> combine.
TensorView moe(ParityRun& r, const TensorView& x, const TensorView& slot_mapping, const TensorView& router,
               const TensorView& gate_up, const TensorView& down) {
    const int64_t tokens = x.shape[0], hidden = x.shape[1], experts = router.shape[0], inter = down.shape[2];
    const int top_k = 2;
    const int64_t slots = tokens * top_k;
    TensorView logits = r.device_output({tokens, experts}, DType::kF32);
    ops::matmul(r.ctx(), x, router, nullptr, logits);
    ops::MoeRouteParams params;
    params.top_k = top_k;
    TensorView ids = r.device_output({tokens, top_k}, DType::kI32);
    TensorView weights = r.device_output({tokens, top_k}, DType::kF32);
    ops::moe_route(r.ctx(), logits, slot_mapping, params, ids, weights);
    TensorView sorted = r.device_output({slots}, DType::kI32), rows = r.device_output({slots}, DType::kI32);
    TensorView offsets = r.device_output({experts + 1}, DType::kI32);
    ops::moe_align(r.ctx(), ids, int(experts), sorted, rows, offsets);
    TensorView gathered = r.device_output({slots, hidden}, r.act());
    ops::moe_gather(r.ctx(), x, sorted, offsets, top_k, gathered);
    TensorView gate = r.device_output({slots, inter}, r.act()), up = r.device_output({slots, inter}, r.act());
    ops::grouped_matmul(r.ctx(), gathered, gate_up.slice(1, 0, inter), offsets, gate);
    ops::grouped_matmul(r.ctx(), gathered, gate_up.slice(1, inter, 2 * inter), offsets, up);
    ops::gated_activation(r.ctx(), gate, up, ops::Activation::kSilu, gate);
    TensorView expert_out = r.device_output({slots, hidden}, r.act());
    ops::grouped_matmul(r.ctx(), gate, down, offsets, expert_out);
    TensorView out = r.device_output({tokens, hidden}, r.act());
    ops::moe_combine(r.ctx(), expert_out, rows, ids, weights, out);
    return out;
}

TEST_P(OpsBatchInvariance, MoeTokenAloneEqualsTheTokenInABatch) {
    ParityRun& r = run_;
    // CUDA takes weights in the activation dtype, and its router matmul is row-invariant on the skinny kernel only
    // (f16/bf16, up to 16 rows; see MatmulRowAloneEqualsTheRowInABatch).
    const bool cuda = r.ctx().device == Device::kCuda;
    if (cuda && r.act() == DType::kF32)
        GTEST_SKIP() << "f32 on CUDA runs the router on cuBLASLt, whose row bits depend on M";
    const DType w_dtype = cuda ? r.act() : DType::kBF16;
    const int64_t tokens = cuda ? 16 : 19, hidden = 48, experts = 8, inter = 40;
    TensorView x = r.host_act({tokens, hidden}, -2, 2);
    TensorView router = r.device(r.host_random({experts, hidden}, w_dtype, -1, 1));
    TensorView gate_up = r.device(r.host_random({experts, 2 * inter, hidden}, w_dtype, -0.3, 0.3));
    TensorView down = r.device(r.host_random({experts, hidden, inter}, w_dtype, -0.3, 0.3));
    std::vector<int64_t> slots(static_cast<size_t>(tokens));
    std::iota(slots.begin(), slots.end(), 0);
    slots[4] = -1;  // a padding token in the batch
    const TensorView all = moe(r, r.device(x), r.device(r.host_i64({tokens}, slots)), router, gate_up, down);
    for (int64_t t = 0; t < tokens; ++t) {
        if (t == 4) continue;
        const TensorView one = moe(r, r.device(x.rows(t, t + 1)), TensorView(), router, gate_up, down);
        EXPECT_TRUE(same_row(all, t, one, 0)) << "token " << t;
    }
    // The padding token's output is zero.
    const ref::Values out = r.read(all);
    for (int64_t h = 0; h < hidden; ++h) EXPECT_EQ(out[size_t(4 * hidden + h)], 0.0) << h;
}

// The grouped GEMM on its own (the MoE chain above needs matmul for its router): a row's output has the same bits
// among many rows of its expert (over several row and column tiles) as the only row of that expert.
TEST_P(OpsBatchInvariance, GroupedMatmulRowAloneEqualsTheRowInItsExpertsBatch) {
    ParityRun& r = run_;
    const int64_t experts = 4, n = 90, k = 200, rows = 150;
    const std::vector<int32_t> offsets = {0, 40, 41, 120, 150};  // 40 rows, 1, 79 and 30
    TensorView x = r.host_act({rows, k});
    const DType w_dtype = r.ctx().device == Device::kCuda ? r.act() : DType::kBF16;  // CUDA: the activation dtype
    TensorView w = r.device(r.host_random({experts, n, k}, w_dtype, -0.5, 0.5));
    TensorView y = r.device_output({rows, n}, r.act());
    ops::grouped_matmul(r.ctx(), r.device(x), w, r.device(r.host_i32({experts + 1}, offsets)), y);
    for (int64_t i = 0; i < rows; ++i) {
        const int64_t expert = std::upper_bound(offsets.begin(), offsets.end(), int32_t(i)) - offsets.begin() - 1;
        std::vector<int32_t> alone(static_cast<size_t>(experts + 1));
        for (int64_t e = 0; e <= experts; ++e) alone[size_t(e)] = e <= expert ? 0 : 1;  // expert's rows: [0, 1)
        TensorView y_row = r.device_output({1, n}, r.act());
        ops::grouped_matmul(r.ctx(), r.device(x.rows(i, i + 1)), w, r.device(r.host_i32({experts + 1}, alone)), y_row);
        EXPECT_TRUE(same_row(y, i, y_row, 0)) << "row " << i << " of expert " << expert;
    }
}

std::string backend_name(const testing::TestParamInfo<BackendMaker>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(CpuF32, OpsBatchInvariance, testing::Values(kCpuF32), backend_name);
#ifdef TACO_WITH_CUDA
// Skipped (with the reason) where no GPU is usable.
INSTANTIATE_TEST_SUITE_P(Cuda, OpsBatchInvariance, testing::Values(kCudaF32, kCudaBF16, kCudaF16), backend_name);
#endif

}  // namespace
}  // namespace taco::parity
