// The scalar reference (reference_ops.h) on small cases worked out by hand, so the parity harness compares the
// backends with something checked on its own.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "reference_ops.h"

namespace taco::ref {
namespace {

TensorView f32(std::vector<float>& v, std::initializer_list<int64_t> dims) {
    return TensorView(v.data(), DType::kF32, dims);
}
TensorView i32(std::vector<int32_t>& v, std::initializer_list<int64_t> dims) {
    return TensorView(v.data(), DType::kI32, dims);
}

void expect_values(const Values& got, const Values& want, double tolerance = 1e-12) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
}

TEST(ReferenceOps, MatmulAndNormsByHand) {
    std::vector<float> x = {1, 2, 3, 4}, w = {1, 0, 0, 1, 1, 1}, bias = {0.5f, 0, -1};
    const TensorView b = f32(bias, {3});
    expect_values(matmul(f32(x, {2, 2}), f32(w, {3, 2}), &b), {1.5, 2, 2, 3.5, 4, 6});
    // A bf16 weight reads as its value: 1.5 is exact in bfloat16.
    std::vector<uint16_t> w16 = {f32_to_bf16(1.5f), f32_to_bf16(-2.0f)};
    expect_values(matmul(f32(x, {2, 2}), TensorView(w16.data(), DType::kBF16, {1, 2}), nullptr), {-2.5, -3.5});

    std::vector<float> row = {3, 4}, ones = {1, 2}, zero = {0, 0}, bias2 = {10, 20};
    const double rms = std::sqrt(12.5);
    expect_values(rms_norm(f32(row, {1, 2}), f32(ones, {2}), 0, 0), {3 / rms, 8 / rms});
    expect_values(rms_norm(f32(row, {1, 2}), f32(zero, {2}), 0, 1), {3 / rms, 4 / rms});  // Gemma's 1 + w
    // mean 3.5, variance 0.25: (-1, 1) * w + b.
    const TensorView b2 = f32(bias2, {2});
    expect_values(layer_norm(f32(row, {1, 2}), f32(ones, {2}), &b2, 0), {9, 22});
    // Per head: head 0 uses weight row 0, head 1 row 1.
    std::vector<float> heads = {3, 4, 1, 3}, head_w = {1, 1, 2, 2};
    expect_values(per_head_layer_norm(f32(heads, {1, 2, 2}), f32(head_w, {2, 2}), nullptr, 0), {-1, 1, -2, 2});
}

TEST(ReferenceOps, ActivationsAtKnownPoints) {
    EXPECT_NEAR(activate(1, ops::Activation::kSilu), 1 / (1 + std::exp(-1.0)), 1e-15);
    EXPECT_NEAR(activate(1, ops::Activation::kGeluErf), 0.8413447460685429, 1e-15);
    EXPECT_NEAR(activate(1, ops::Activation::kGeluTanh), 0.8411919906082768, 1e-15);
    EXPECT_EQ(activate(-1, ops::Activation::kRelu), 0);
    EXPECT_EQ(activate(3, ops::Activation::kRelu2), 9);
    EXPECT_EQ(activate(-3, ops::Activation::kRelu2), 0);
}

TEST(ReferenceOps, RotaryPairsHalvesInNeoxStyleAndNeighboursOtherwise) {
    // A quarter turn: (a, b) -> (-b, a). Row 1 of the table; token 0 reaches it by position 0 + offset 1.
    std::vector<float> x = {1, 2, 3, 4}, cos = {1, 1, 0, 0}, sin = {0, 0, 1, 1};
    std::vector<int32_t> pos = {0}, offset = {1};
    const TensorView c = f32(cos, {2, 2}), s = f32(sin, {2, 2});
    expect_values(rotary_embedding(f32(x, {1, 1, 4}), i32(pos, {1}), i32(offset, {1}), c, s, 4, true), {-3, -4, 1, 2});
    expect_values(rotary_embedding(f32(x, {1, 1, 4}), i32(pos, {1}), i32(offset, {1}), c, s, 4, false), {-2, 1, -4, 3});
    // Without offsets, row 0 is the identity.
    expect_values(rotary_embedding(f32(x, {1, 1, 4}), i32(pos, {1}), TensorView(), c, s, 4, true), {1, 2, 3, 4});
    // Partial: only the first rotary_dim = 2 turn.
    std::vector<float> cos1 = {1, 0}, sin1 = {0, 1};
    expect_values(rotary_embedding(f32(x, {1, 1, 4}), i32(pos, {1}), i32(offset, {1}), f32(cos1, {2, 1}),
                                   f32(sin1, {2, 1}), 2, true),
                  {-2, 1, 3, 4});
}

// One sequence of two keys in reversed physical blocks of one slot, two heads over one kv head, a padding token.
struct TinyAttention {
    std::vector<float> q = std::vector<float>(3 * 2 * 2, 0.0f);  // [3 tokens, 2 heads, 2]: scores all 0
    std::vector<float> k = {9, 9, 9, 9};                         // [2 blocks, 1, 1 kv head, 2]
    std::vector<float> v = {10, 20, 1, 2};                       // block 0 holds position 1, block 1 position 0
    std::vector<float> out_before = std::vector<float>(12, -5.0f);
    std::vector<int32_t> query_start = {0, 2}, seq_lens = {2}, positions = {0, 1, 0}, table = {1, 0};
    ops::AttentionMetadata batch() {
        ops::AttentionMetadata m;
        m.query_start = i32(query_start, {2});
        m.seq_lens = i32(seq_lens, {1});
        m.positions = i32(positions, {3});
        m.block_tables = i32(table, {1, 2});
        return m;
    }
    Values run(const ops::AttentionParams& params) {
        return paged_attention(f32(q, {3, 2, 2}), f32(k, {2, 1, 1, 2}), f32(v, {2, 1, 1, 2}), batch(), params,
                               f32(out_before, {3, 2, 2}));
    }
};

TEST(ReferenceOps, PagedAttentionFollowsTheBlockTableCausalityWindowAndAlibi) {
    TinyAttention a;
    ops::AttentionParams params;
    // Token 0 sees position 0 (v = 1, 2); token 1 averages both; the padding row keeps its -5s.
    expect_values(a.run(params), {1, 2, 1, 2, 5.5, 11, 5.5, 11, -5, -5, -5, -5});
    params.sliding_window = 1;  // each token sees itself only
    expect_values(a.run(params), {1, 2, 1, 2, 10, 20, 10, 20, -5, -5, -5, -5});
    params.sliding_window = 0;
    std::vector<float> slopes = {0, std::log(3.0f)};  // head 1: position 0 weighs exp(-log 3) = 1/3 of position 1
    params.alibi_slopes = f32(slopes, {2});
    const Values out = a.run(params);
    EXPECT_NEAR(out[6], (1 * 0.25 + 10 * 0.75), 1e-6);
    EXPECT_NEAR(out[4], 5.5, 1e-12);
    // Falcon: bias bf16(slope * bf16(j)) inside the scale; with scale 1 the same weights up to bf16(log 3).
    params.alibi_bf16_key_positions = true;
    const double third = std::exp(-round_to_bf16(std::log(3.0f)));
    EXPECT_NEAR(a.run(params)[6], (1 * third + 10) / (1 + third), 1e-6);
}

TEST(ReferenceOps, RoutingTopKRenormalisesAndBreaksTiesToTheLowerId) {
    std::vector<float> logits = {0, std::log(2.0f), std::log(4.0f), 1, 1, 1};
    std::vector<int64_t> slots = {0, -1};
    ops::MoeRouteParams params;
    params.top_k = 2;
    params.renormalize = false;
    Routing r = moe_route(f32(logits, {2, 3}), TensorView(), params);
    EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1, 0, 1}));
    expect_values(r.weights, {4.0 / 7, 2.0 / 7, 1.0 / 3, 1.0 / 3}, 1e-7);
    params.renormalize = true;
    r = moe_route(f32(logits, {2, 3}), TensorView(slots.data(), DType::kI64, {2}), params);
    EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1, 3, 3}));  // the padding token: id E, weight 0
    expect_values(r.weights, {2.0 / 3, 1.0 / 3, 0, 0}, 1e-7);
}

TEST(ReferenceOps, SparseMixerMasksLogitsFarBelowEachRoundsMaximum) {
    std::vector<float> logits = {1, 0, 3};
    ops::MoeRouteParams params;
    params.routing = ops::MoeRouting::kSparseMixer;
    params.top_k = 2;
    // eps 0.5: no gap exceeds 2 eps = 1, so each round is a plain softmax over what is left.
    params.sparsemixer_eps = 0.5f;
    Routing r = moe_route(f32(logits, {1, 3}), TensorView(), params);
    const double e = std::exp(1.0), e3 = std::exp(3.0);
    EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0}));
    expect_values(r.weights, {e3 / (e + 1 + e3), e / (e + 1)});
    // eps 0.1: gaps 2/3 and 1 (round 1), 1 (round 2) exceed 0.2: each winner stands alone.
    params.sparsemixer_eps = 0.1f;
    r = moe_route(f32(logits, {1, 3}), TensorView(), params);
    EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0}));
    expect_values(r.weights, {1, 1});
}

TEST(ReferenceOps, AlignGatherGroupedMatmulAndCombineByHand) {
    // Slots 0..5 of ids [[2, 0], [1, 2], [3, 0]], E = 3 (3: padding).
    std::vector<int32_t> ids = {2, 0, 1, 2, 3, 0};
    const Alignment a = moe_align(i32(ids, {3, 2}), 3);
    EXPECT_EQ(a.sorted_slots, (std::vector<int32_t>{1, 5, 2, 0, 3, 4}));
    EXPECT_EQ(a.slot_rows, (std::vector<int32_t>{3, 0, 2, 4, 5, 1}));
    EXPECT_EQ(a.expert_offsets, (std::vector<int32_t>{0, 2, 3, 5}));

    std::vector<float> x = {1, 2, 3};  // [3 tokens, 1]
    std::vector<int32_t> sorted = a.sorted_slots, offsets = a.expert_offsets;
    expect_values(moe_gather(f32(x, {3, 1}), i32(sorted, {6}), i32(offsets, {4}), 2), {1, 3, 2, 1, 2, 0});

    // Experts' [N = 1, K = 1] weights are the second rows of a [3, 2, 1] stack: 10, 20, 30.
    std::vector<float> stack = {-1, 10, -1, 20, -1, 30}, rows = {1, 3, 2, 1, 2, 7};
    const TensorView w = f32(stack, {3, 2, 1}).slice(1, 1, 2);
    expect_values(grouped_matmul(f32(rows, {6, 1}), w, i32(offsets, {4})), {10, 30, 40, 30, 60, 0});

    std::vector<float> expert_out = {1, 2, 3, 4, 5, 6}, weights = {0.5f, 0.25f, 1, 2, 0, 4};
    std::vector<int32_t> slot_rows = a.slot_rows;
    // Token 0: 0.5 * row 3 + 0.25 * row 0; token 1: row 2 + 2 * row 4; token 2: 0 * row 5 + 4 * row 1.
    expect_values(moe_combine(f32(expert_out, {6, 1}), i32(slot_rows, {6}), i32(ids, {3, 2}), f32(weights, {3, 2})),
                  {2.25, 13, 8});

    std::vector<float> shared = {2, 4}, gate = {0}, out = {1, 1};
    expect_values(add_sigmoid_gated(f32(shared, {1, 2}), f32(gate, {1, 1}), f32(out, {1, 2})), {2, 3});
}

TEST(ReferenceOps, KvWritesSkipPaddingSlotsAndLookupsReadRows) {
    std::vector<float> k = {1, 2, 3, 4}, v = {5, 6, 7, 8}, k_cache(6, 0.0f), v_cache(6, -1.0f);
    std::vector<int64_t> slots = {2, -1};
    const KvCache c = write_kv_cache(f32(k, {2, 1, 2}), f32(v, {2, 1, 2}), TensorView(slots.data(), DType::kI64, {2}),
                                     f32(k_cache, {3, 1, 1, 2}), f32(v_cache, {3, 1, 1, 2}));
    expect_values(c.k, {0, 0, 0, 0, 1, 2});
    expect_values(c.v, {-1, -1, -1, -1, 5, 6});
    std::vector<float> table = {1, 2, 3, 4, 5, 6};
    std::vector<int32_t> rows = {2, 0, 2};
    expect_values(embedding(i32(rows, {3}), f32(table, {3, 2})), {5, 6, 1, 2, 5, 6});
    EXPECT_NEAR(softcap(f32(table, {6}), 2)[1], 2 * std::tanh(1.0), 1e-15);
}

}  // namespace
}  // namespace taco::ref
