// Load-time rearrangements of GPT-style checkpoints: Conv1D transposes, fused qkv splits, ALiBi slopes.
#include "model/weight_layout.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "model/alibi.h"

namespace taco {
namespace {

std::vector<int64_t> range(int64_t begin, int64_t end) {
    std::vector<int64_t> out;
    for (int64_t i = begin; i < end; ++i) out.push_back(i);
    return out;
}

std::vector<int64_t> concat(std::initializer_list<std::vector<int64_t>> parts) {
    std::vector<int64_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

TEST(WeightLayout, TransposedCopyKeepsDtypeAndBits) {
    Tensor m = Tensor::empty({2, 3}, DType::kBF16);
    for (int i = 0; i < 6; ++i) m.as<uint16_t>()[i] = uint16_t(0x3f00 + i);
    Tensor t = transposed_copy(m);
    ASSERT_EQ(t.view().dtype, DType::kBF16);
    ASSERT_EQ(t.size(0), 3);
    ASSERT_EQ(t.size(1), 2);
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) EXPECT_EQ(t.as<uint16_t>()[c * 2 + r], m.as<uint16_t>()[r * 3 + c]);
}

TEST(WeightLayout, GatherRowsCopiesRowsOfMatricesAndElementsOfVectors) {
    Tensor m = Tensor::empty({4, 2}, DType::kF32);
    for (int i = 0; i < 8; ++i) m.as<float>()[i] = float(i);
    Tensor g = gather_rows(m, {3, 0});
    EXPECT_EQ(std::vector<float>(g.as<float>(), g.as<float>() + 4), (std::vector<float>{6, 7, 0, 1}));
    Tensor v = Tensor::empty({4}, DType::kF32);
    for (int i = 0; i < 4; ++i) v.as<float>()[i] = float(10 + i);
    Tensor gv = gather_rows(v, {2, 2, 1});
    EXPECT_EQ(std::vector<float>(gv.as<float>(), gv.as<float>() + 3), (std::vector<float>{12, 12, 11}));
}

TEST(WeightLayout, ConcatenatedQkvIsQThenKThenV) {
    auto rows = qkv_rows(QkvLayout::kConcatenated, 4, 1, 2);  // GPT-BigCode multi-query, Falcon-7b
    ASSERT_TRUE(rows.is_ok());
    EXPECT_EQ(rows->q, range(0, 8));
    EXPECT_EQ(rows->k, range(8, 10));
    EXPECT_EQ(rows->v, range(10, 12));
}

TEST(WeightLayout, PerHeadQkvInterleavesWholeHeads) {
    auto rows = qkv_rows(QkvLayout::kPerHead, 2, 2, 3);  // GPT-NeoX, Bloom: view [heads, 3, head_dim]
    ASSERT_TRUE(rows.is_ok());
    EXPECT_EQ(rows->q, concat({range(0, 3), range(9, 12)}));
    EXPECT_EQ(rows->k, concat({range(3, 6), range(12, 15)}));
    EXPECT_EQ(rows->v, concat({range(6, 9), range(15, 18)}));
    EXPECT_FALSE(qkv_rows(QkvLayout::kPerHead, 4, 2, 3).is_ok());
}

TEST(WeightLayout, PerKvGroupQkvPutsEachGroupsQueriesBeforeItsKeyAndValue) {
    // Falcon new decoder architecture: view [kv_heads, heads / kv_heads + 2, head_dim].
    auto rows = qkv_rows(QkvLayout::kPerKvGroup, 4, 2, 1);
    ASSERT_TRUE(rows.is_ok());
    EXPECT_EQ(rows->q, (std::vector<int64_t>{0, 1, 4, 5}));
    EXPECT_EQ(rows->k, (std::vector<int64_t>{2, 6}));
    EXPECT_EQ(rows->v, (std::vector<int64_t>{3, 7}));
    EXPECT_FALSE(qkv_rows(QkvLayout::kPerKvGroup, 4, 3, 1).is_ok());
}

TEST(Alibi, SlopesOfAPowerOfTwoHeadCountAreGeometric) {
    auto slopes = alibi_slopes(8);
    ASSERT_EQ(slopes.size(), 8u);
    for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(slopes[size_t(i)], std::pow(2.0f, -float(i + 1)));
}

TEST(Alibi, OtherHeadCountsTakeOddPowersOfTheNextBase) {
    // 12 heads: 8 slopes 2^-1 .. 2^-8, then 4 of base 2^-0.5 at powers 1, 3, 5, 7.
    auto slopes = alibi_slopes(12);
    ASSERT_EQ(slopes.size(), 12u);
    EXPECT_FLOAT_EQ(slopes[7], 1.0f / 256.0f);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(slopes[size_t(8 + i)], std::pow(2.0, -0.5 * (2 * i + 1)), 1e-7);
}

}  // namespace
}  // namespace taco
