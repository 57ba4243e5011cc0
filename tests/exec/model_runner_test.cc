#include "exec/model_runner.h"

#include <cstring>

#include <gtest/gtest.h>

namespace taco {
namespace {

std::unique_ptr<ModelRunner> runner(int64_t device_blocks, int64_t host_blocks) {
    auto decoder = Decoder::load(std::string(TACO_SOURCE_DIR) + "/tests/data/models/llama");
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    RunnerOptions options;
    options.num_device_blocks = device_blocks;
    options.num_host_blocks = host_blocks;
    options.max_num_batched_tokens = 64;
    options.max_num_seqs = 4;
    options.max_model_len = 64;  // four blocks of 16: what the smallest pool here holds
    auto made = ModelRunner::create(std::move(decoder).value(), options);
    EXPECT_TRUE(made.is_ok()) << made.status().message();
    return std::move(made).value();
}

// Bytes of one device block (all layers, K and V), for comparison.
std::vector<uint8_t> block_bytes(const KvCacheTensors& kv, int32_t block) {
    std::vector<uint8_t> out;
    for (size_t layer = 0; layer < kv.k.size(); ++layer) {
        for (const TensorView* t : {&kv.k[layer], &kv.v[layer]}) {
            const size_t n = t->nbytes() / size_t(kv.num_blocks);
            const uint8_t* p = static_cast<const uint8_t*>(t->data) + size_t(block) * n;
            out.insert(out.end(), p, p + n);
        }
    }
    return out;
}

TEST(ModelRunner, HostTierRoundTripRestoresTheKvExactly) {
    auto r = runner(4, 2);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 16; ++i) tokens.push_back(10 + i);
    std::vector<int32_t> table = {1};
    RunnerSequence seq{tokens, 0, 16, table, true};
    r->execute({&seq, 1});
    const auto original = block_bytes(r->device_kv(), 1);
    // Demote block 1 to host block 0, overwrite it with another sequence, promote into device block 3.
    std::vector<KvCopy> demote = {{false, 1, true, 0}};
    r->copy_blocks(demote);
    std::vector<int32_t> other(16, 7);
    RunnerSequence overwrite{other, 0, 16, table, false};
    std::vector<int32_t> other_table = {1};
    overwrite.block_table = other_table;
    overwrite.wants_logits = true;
    r->execute({&overwrite, 1});
    EXPECT_NE(block_bytes(r->device_kv(), 1), original);
    std::vector<KvCopy> promote = {{true, 0, false, 3}};
    r->copy_blocks(promote);
    EXPECT_EQ(block_bytes(r->device_kv(), 3), original);
    // And decoding on top of the restored block gives the logits of decoding on top of the original.
    tokens.push_back(99);
    std::vector<int32_t> restored_table = {3, 2};
    RunnerSequence next{tokens, 16, 1, restored_table, true};
    TensorView a = r->execute({&next, 1});
    auto fresh = runner(4, 0);
    std::vector<int32_t> fresh_table = {0, 1};
    RunnerSequence all{tokens, 0, 17, fresh_table, true};
    TensorView b = fresh->execute({&all, 1});
    ASSERT_EQ(a.numel(), b.numel());
    EXPECT_EQ(std::memcmp(a.as<float>(), b.as<float>(), size_t(a.numel()) * sizeof(float)), 0);
}

// A step's block moves cost one copy per run of consecutive blocks, whatever the number of layers (the host tier's
// demotions once the device tier is full: 64 copies a block on an 8B Llama were ~4 ms of CUDA calls a step).
TEST(ModelRunner, EachRunOfBlocksIsOneCopyOfEveryLayer) {
    auto r = runner(4, 3);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 48; ++i) tokens.push_back(10 + i);
    const std::vector<int32_t> table = {0, 2, 3};
    RunnerSequence seq{tokens, 0, 48, table, true};
    r->execute({&seq, 1});
    const auto block0 = block_bytes(r->device_kv(), 0), block2 = block_bytes(r->device_kv(), 2),
               block3 = block_bytes(r->device_kv(), 3);
    ASSERT_NE(block0, block2);
    // Demote 2, 3 (one run) and 0; overwrite the device tier; promote all three as one run into 1, 2, 3.
    const std::vector<KvCopy> demote = {{false, 2, true, 0}, {false, 3, true, 1}, {false, 0, true, 2}};
    EXPECT_EQ(r->copy_blocks(demote), 2);
    const std::vector<int32_t> other(48, 7);
    RunnerSequence overwrite{other, 0, 48, table, true};
    r->execute({&overwrite, 1});
    EXPECT_NE(block_bytes(r->device_kv(), 2), block2);
    const std::vector<KvCopy> promote = {{true, 0, false, 1}, {true, 1, false, 2}, {true, 2, false, 3}};
    EXPECT_EQ(r->copy_blocks(promote), 1);
    EXPECT_EQ(block_bytes(r->device_kv(), 1), block2);
    EXPECT_EQ(block_bytes(r->device_kv(), 2), block3);
    EXPECT_EQ(block_bytes(r->device_kv(), 3), block0);
    // A copy within the device tier (copy-on-write) is one copy too.
    const std::vector<KvCopy> cow = {{false, 3, false, 0}};
    EXPECT_EQ(r->copy_blocks(cow), 1);
    EXPECT_EQ(block_bytes(r->device_kv(), 0), block0);
}

}  // namespace
}  // namespace taco
