#include "model/kv_cache_tensors.h"

#include <cstring>

#include <gtest/gtest.h>

namespace taco {
namespace {

ModelConfig small_model() {
    ModelConfig model;
    model.num_hidden_layers = 3;
    model.num_key_value_heads = 2;
    model.head_dim = 8;
    return model;
}

TEST(KvCacheTensors, LayersAreRowsOfOneAllocationAtOneAlignedPitch) {
    const int64_t num_blocks = 5, block_size = 4;
    const KvCacheTensors kv = KvCacheTensors::allocate(small_model(), num_blocks, block_size);
    ASSERT_EQ(kv.k.size(), 3u);
    ASSERT_EQ(kv.v.size(), 3u);
    EXPECT_EQ(kv.block_elements(), block_size * 2 * 8);
    const size_t pitch = kv.row_pitch_bytes();
    EXPECT_EQ(pitch % 256, 0u);
    EXPECT_GE(pitch, size_t(num_blocks * kv.block_elements()) * sizeof(float));
    const char* base = static_cast<const char*>(kv.storage.view().data);
    for (size_t layer = 0; layer < 3; ++layer) {
        EXPECT_EQ(kv.k[layer].data, base + 2 * layer * pitch);
        EXPECT_EQ(kv.v[layer].data, base + (2 * layer + 1) * pitch);
        for (const TensorView* t : {&kv.k[layer], &kv.v[layer]}) {
            EXPECT_EQ(t->shape_string(), "[5, 4, 2, 8]");
            EXPECT_TRUE(t->is_contiguous());
        }
    }
}

TEST(KvCacheTensors, BlocksViewHoldsTheSameBlocksOfEveryLayer) {
    const KvCacheTensors kv = KvCacheTensors::allocate(small_model(), 5, 4);
    const int64_t block_floats = kv.block_elements();
    // Every float of the cache holds its own index within its tensor, offset by the tensor's number.
    for (size_t t = 0; t < 6; ++t) {
        const TensorView& tensor = t % 2 == 0 ? kv.k[t / 2] : kv.v[t / 2];
        float* p = tensor.as<float>();
        for (int64_t i = 0; i < tensor.numel(); ++i) p[i] = float(t * 100000 + size_t(i));
    }
    const TensorView blocks = kv.blocks(1, 3);
    ASSERT_EQ(blocks.shape_string(), "[6, " + std::to_string(2 * block_floats) + "]");
    EXPECT_EQ(size_t(blocks.strides[0]) * sizeof(float), kv.row_pitch_bytes());
    for (int64_t t = 0; t < 6; ++t) {
        const float* row = blocks.row<float>(t);
        const TensorView& tensor = t % 2 == 0 ? kv.k[size_t(t / 2)] : kv.v[size_t(t / 2)];
        const float* expected = tensor.rows(1, 3).as<float>();
        EXPECT_EQ(std::memcmp(row, expected, size_t(2 * block_floats) * sizeof(float)), 0) << "tensor " << t;
    }
    EXPECT_EQ(kv.blocks(5, 5).numel(), 0);
}

TEST(KvCacheTensors, AnEmptyTierHasNoBlocks) {
    const KvCacheTensors kv = KvCacheTensors::allocate(small_model(), 0, 16);
    EXPECT_EQ(kv.k.size(), 3u);
    EXPECT_EQ(kv.k[0].numel(), 0);
    EXPECT_EQ(kv.blocks(0, 0).numel(), 0);
}

}  // namespace
}  // namespace taco
