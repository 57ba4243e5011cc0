// ops.cc's checks abort naming the op and the bad operand: one test per kind of check (dtype, device, shape, rank,
// layout, length, parameter range), not per op.
#include <vector>

#include <gtest/gtest.h>

#include "kernels/ops.h"

namespace taco::ops {
namespace {

class OpsDeathTest : public testing::Test {
protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

    TensorView f32(std::initializer_list<int64_t> dims, Device device = Device::kCpu) {
        return TensorView(floats_.data(), DType::kF32, dims, device);
    }
    TensorView typed(DType dtype, std::initializer_list<int64_t> dims) {
        return TensorView(floats_.data(), dtype, dims);
    }

    const ExecContext ctx_ = ExecContext::cpu();
    std::vector<float> floats_ = std::vector<float>(4096, 0.0f);
};

TEST_F(OpsDeathTest, WrongDtypeNamesTheOperandAndBothDtypes) {
    EXPECT_DEATH(matmul(ctx_, typed(DType::kI32, {2, 8}), f32({4, 8}), nullptr, f32({2, 4})),
                 "matmul: x has dtype I32, not an activation dtype of the cpu");
    EXPECT_DEATH(rms_norm(ctx_, f32({2, 8}), typed(DType::kBF16, {8}), 1e-6f, 0, f32({2, 8})),
                 "rms_norm: weight must be a 1-d F32 tensor, got .8. BF16");
    EXPECT_DEATH(write_kv_cache(ctx_, f32({3, 1, 8}), f32({3, 1, 8}), typed(DType::kI32, {3}), f32({2, 4, 1, 8}),
                                f32({2, 4, 1, 8})),
                 "write_kv_cache: slot_mapping must be a 1-d I64 tensor, got .3. I32");
}

TEST_F(OpsDeathTest, OperandOnAnotherDeviceNamesItAndBothDevices) {
    EXPECT_DEATH(add_inplace(ctx_, f32({2, 8}), f32({2, 8}, Device::kCuda)),
                 "add_inplace: y is on the cuda, the op runs on the cpu");
    std::vector<int32_t> ids(4, 0);
    EXPECT_DEATH(moe_align(ctx_, TensorView(ids.data(), DType::kI32, {2, 2}, Device::kCuda), 4, typed(DType::kI32, {4}),
                           typed(DType::kI32, {4}), typed(DType::kI32, {5})),
                 "moe_align: ids is on the cuda, the op runs on the cpu");
}

TEST_F(OpsDeathTest, ShapeMismatchNamesTheShapes) {
    EXPECT_DEATH(matmul(ctx_, f32({2, 3}), f32({4, 5}), nullptr, f32({2, 4})),
                 "matmul: x .2, 3. . w .4, 5..T -> y .2, 4.");
    EXPECT_DEATH(gated_activation(ctx_, f32({2, 3}), f32({2, 4}), Activation::kSilu, f32({2, 3})),
                 "gated_activation: shapes .2, 3. and .2, 4. differ");
    const TensorView x = f32({2, 5}), w = f32({3, 5}), w4 = f32({4, 5});
    EXPECT_DEATH(gated_projection(ctx_, x, {&w, nullptr, f32({2, 3})}, {&w4, nullptr, f32({2, 4})}, Activation::kSilu,
                                  f32({2, 3})),
                 "gated_projection: shapes .2, 3. and .2, 4. differ");
    EXPECT_DEATH(gated_projection(ctx_, x, {nullptr, nullptr, f32({2, 3})}, {&w, nullptr, f32({2, 3})},
                                  Activation::kSilu, f32({2, 3})),
                 "gated_projection: a projection without a weight");
}

TEST_F(OpsDeathTest, WrongRankNamesTheOperandAndItsShape) {
    std::vector<int32_t> positions(4, 0);
    EXPECT_DEATH(rotary_embedding(ctx_, f32({4, 8}), TensorView(positions.data(), DType::kI32, {4}), TensorView(),
                                  f32({16, 4}), f32({16, 4}), 8, true),
                 "rotary_embedding: x must be 3-d, got .4, 8.");
}

TEST_F(OpsDeathTest, NonContiguousOperandIsNamed) {
    const TensorView columns = f32({2, 6}).slice(1, 0, 3);  // [2, 3] with row stride 6
    EXPECT_DEATH(layer_norm(ctx_, columns, f32({3}), nullptr, 1e-5f, f32({2, 3})),
                 "layer_norm: x .2, 3. is not contiguous");
}

TEST_F(OpsDeathTest, VectorOfTheWrongLengthIsNamedWithBothLengths) {
    EXPECT_DEATH(rms_norm(ctx_, f32({2, 8}), f32({7}), 1e-6f, 0, f32({2, 8})),
                 "rms_norm: weight has 7 elements, expected 8");
}

TEST_F(OpsDeathTest, ParameterOutOfRangeNamesTheParameter) {
    std::vector<int32_t> positions(4, 0);
    EXPECT_DEATH(rotary_embedding(ctx_, f32({4, 2, 8}), TensorView(positions.data(), DType::kI32, {4}), TensorView(),
                                  f32({16, 1}), f32({16, 1}), 3, true),
                 "rotary_embedding: rotary_dim 3 for head_dim 8");
    MoeRouteParams route;
    route.top_k = 9;
    EXPECT_DEATH(moe_route(ctx_, f32({2, 8}), TensorView(), route, typed(DType::kI32, {2, 9}), f32({2, 9})),
                 "moe_route: top 9 of .2, 8. logits");
    EXPECT_DEATH(softcap_inplace(ctx_, f32({4}), 0.0f), "softcap_inplace: cap 0 must be positive");
}

// Paged-attention metadata the CPU cannot use aborts naming it (a block id outside the cache used to be read past the
// cache's end; CUDA gives NaN rows instead, tests/cuda/paged_attention_cuda_test.cc).
TEST_F(OpsDeathTest, UnusablePagedAttentionMetadataIsNamed) {
    std::vector<int32_t> query_start = {0, 1}, seq_lens = {3}, positions = {2}, table = {5};
    AttentionMetadata batch;
    batch.query_start = TensorView(query_start.data(), DType::kI32, {2});
    batch.seq_lens = TensorView(seq_lens.data(), DType::kI32, {1});
    batch.positions = TensorView(positions.data(), DType::kI32, {1});
    batch.block_tables = TensorView(table.data(), DType::kI32, {1, 1});
    batch.max_query_len = 1;
    batch.max_seq_len = 3;
    // q, out: [1 token, 1 head, 8]; caches: [2 blocks, 4 slots, 1 kv head, 8].
    EXPECT_DEATH(paged_attention(ctx_, f32({1, 1, 8}), f32({2, 4, 1, 8}), f32({2, 4, 1, 8}), batch, {}, f32({1, 1, 8})),
                 "block table entry 0 of sequence 0 is 5, outside the cache of 2 blocks");
    table[0] = 1;
    positions[0] = -1;
    EXPECT_DEATH(paged_attention(ctx_, f32({1, 1, 8}), f32({2, 4, 1, 8}), f32({2, 4, 1, 8}), batch, {}, f32({1, 1, 8})),
                 "query position -1 outside the sequence's 3 keys");
}

}  // namespace
}  // namespace taco::ops
