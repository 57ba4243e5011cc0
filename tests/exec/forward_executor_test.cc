// ForwardExecutor: after warm-up a forward pass allocates nothing (no host, pinned or device allocation through
// the allocator interface, whatever the step shape within the limits), the workspace keeps the size of its dry
// run, and padding rows (as a CUDA graph bucket adds) change no real row's logits.
#include "exec/forward_executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace taco {
namespace {

class ForwardExecutorTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto loaded = Decoder::load(std::string(TACO_SOURCE_DIR) + "/tests/data/models/" + GetParam());
        ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
        decoder_ = std::move(loaded).value();
    }
    std::unique_ptr<Decoder> decoder_;
};

std::vector<int32_t> ids_of(int64_t n, int32_t seed, int64_t vocab) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((seed * 131 + i * 17) % vocab));
    return ids;
}

TEST_P(ForwardExecutorTest, AForwardPassAfterWarmUpAllocatesNothing) {
    ExecutorOptions options;
    options.max_num_tokens = 48;
    options.max_num_sequences = 4;
    options.max_model_len = 64;
    options.block_size = 16;
    ForwardExecutor executor(*decoder_, options);
    KvCacheTensors kv = KvCacheTensors::allocate(decoder_->config(), 16, 16);
    const int64_t vocab = decoder_->config().vocab_size;
    const auto a = ids_of(40, 1, vocab), b = ids_of(30, 2, vocab);
    const std::vector<int32_t> table_a = {0, 1, 2}, table_b = {3, 4};
    // Warm-up: one prefill step (thread-local kernel scratch grows here, once).
    RunnerSequence pa{a, 0, 24, table_a, true}, pb{b, 0, 24, table_b, true};
    pb.num_prompt_logits = 8;
    const RunnerSequence prefill[] = {pa, pb};
    executor.execute(prefill, kv);
    const size_t workspace_bytes = executor.workspace().capacity_bytes();
    const int64_t allocations = total_num_allocations();
    // Decode, a chunk, a mixed step, padding: nothing is allocated.
    for (int64_t step = 0; step < 4; ++step) {
        RunnerSequence da{a, 24 + step, 1, table_a, true}, db{b, 24 + step, 1, table_b, true};
        const RunnerSequence decode[] = {da, db};
        executor.execute(decode, kv, step % 2 == 0 ? 0 : 8);
    }
    RunnerSequence chunk{a, 28, 12, table_a, true};
    chunk.num_prompt_logits = 4;
    executor.execute({&chunk, 1}, kv);
    EXPECT_EQ(total_num_allocations(), allocations) << "a warmed-up forward pass allocated";
    EXPECT_EQ(executor.workspace().capacity_bytes(), workspace_bytes);
    EXPECT_LE(executor.workspace().high_water_bytes(), workspace_bytes);
}

TEST_P(ForwardExecutorTest, PaddingRowsChangeNoRealRow) {
    ExecutorOptions options;
    options.max_num_tokens = 32;
    options.max_num_sequences = 2;
    options.max_model_len = 32;
    const int64_t vocab = decoder_->config().vocab_size;
    const auto ids = ids_of(12, 3, vocab);
    const std::vector<int32_t> table = {0};
    auto run = [&](int64_t pad) {
        ForwardExecutor executor(*decoder_, options);
        KvCacheTensors kv = KvCacheTensors::allocate(decoder_->config(), 2, 16);
        RunnerSequence prefill{ids, 0, 11, table, true};
        prefill.num_prompt_logits = 10;
        std::vector<float> out;
        TensorView l = executor.execute({&prefill, 1}, kv, pad);
        out.insert(out.end(), l.as<float>(), l.as<float>() + l.numel());
        RunnerSequence decode{ids, 11, 1, table, true};
        l = executor.execute({&decode, 1}, kv, pad);
        out.insert(out.end(), l.as<float>(), l.as<float>() + l.numel());
        return out;
    };
    const auto plain = run(0), padded = run(32);
    ASSERT_EQ(plain.size(), padded.size());
    EXPECT_EQ(std::memcmp(plain.data(), padded.data(), plain.size() * sizeof(float)), 0);
}

// Decode steps in a CUDA graph bucket's padded layout (the CPU runs it eagerly): every real row has the bits of the
// plain step, for each number of sequences the buckets round up, and steps a bucket does not take (prefill, more
// sequences than the largest bucket) run as before.
TEST_P(ForwardExecutorTest, DecodeBucketsChangeNoRealRow) {
    const int64_t vocab = decoder_->config().vocab_size;
    const std::vector<std::vector<int32_t>> ids = {ids_of(20, 1, vocab), ids_of(20, 2, vocab), ids_of(20, 3, vocab)};
    const std::vector<std::vector<int32_t>> tables = {{0, 1}, {2, 3}, {4, 5}};
    auto run = [&](GraphMode mode, int64_t num_seqs) {
        ExecutorOptions options;
        options.max_num_tokens = 48;
        options.max_num_sequences = 4;
        options.max_model_len = 32;
        options.graph_mode = mode;
        options.cuda_graph_sizes = {1, 2, 4};
        ForwardExecutor executor(*decoder_, options);
        KvCacheTensors kv = KvCacheTensors::allocate(decoder_->config(), 8, 16);
        std::vector<RunnerSequence> prefill;
        for (int64_t i = 0; i < num_seqs; ++i) prefill.push_back({ids[size_t(i)], 0, 12, tables[size_t(i)], true});
        std::vector<float> out;
        auto keep = [&](const TensorView& l) { out.insert(out.end(), l.as<float>(), l.as<float>() + l.numel()); };
        keep(executor.execute(prefill, kv));
        for (int64_t step = 0; step < 3; ++step) {
            std::vector<RunnerSequence> decode;
            for (int64_t i = 0; i < num_seqs; ++i)
                decode.push_back({ids[size_t(i)], 12 + step, 1, tables[size_t(i)], true});
            const TensorView l = executor.execute(decode, kv);
            EXPECT_EQ(l.shape[0], num_seqs);
            keep(l);
        }
        return out;
    };
    for (int64_t num_seqs : {1, 2, 3}) {
        const auto plain = run(GraphMode::kEager, num_seqs), bucketed = run(GraphMode::kEagerBuckets, num_seqs);
        ASSERT_EQ(plain.size(), bucketed.size());
        EXPECT_EQ(std::memcmp(plain.data(), bucketed.data(), plain.size() * sizeof(float)), 0) << num_seqs;
    }
}

TEST(DefaultCudaGraphSizes, AreVllmsBucketsCutAtMaxNumSeqs) {
    EXPECT_EQ(default_cuda_graph_sizes(1), (std::vector<int64_t>{1}));
    EXPECT_EQ(default_cuda_graph_sizes(3), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(default_cuda_graph_sizes(20), (std::vector<int64_t>{1, 2, 4, 8, 16}));
    const std::vector<int64_t> all = default_cuda_graph_sizes(100000);
    EXPECT_EQ(all.size(), 3u + 64u);
    EXPECT_EQ(all.back(), 512);
}

// Llama-style, MoE (softmax top-k, sparsemixer + shared-less), shared expert, GPT-style learned positions, ALiBi,
// post-norm, LongRoPE, sandwich norms.
INSTANTIATE_TEST_SUITE_P(Families, ForwardExecutorTest,
                         ::testing::Values("llama", "mixtral", "phimoe", "qwen2_moe", "gpt2", "falcon_alibi", "opt",
                                           "phi3_longrope", "gemma2", "bloom"));

}  // namespace
}  // namespace taco
