// The execution layer on a GPU: the dry run sizes a device workspace for every family, a warmed-up forward pass
// allocates nothing (device, pinned or host, through the allocator interface), padding rows change no real row,
// host_logits() gathers rows, a block swapped to the host tier and back (the copy stream, ordered by events) restores
// the KV exactly, the GPU rule of KV sizing leaves this process at about --gpu-memory-utilization of the GPU, its
// errors, and perplexity on CUDA in fp32 agrees with the CPU. Skipped where no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "cuda_test_util.h"
#include "exec/model_runner.h"
#include "exec/perplexity.h"
#include "golden_models.h"
#include "kernels/cuda/cuda_backend.h"

namespace taco {
namespace {

using testing_util::ids_of;

std::vector<float> to_vector(const TensorView& host) {
    return std::vector<float>(host.as<float>(), host.as<float>() + host.numel());
}

class CudaExecutor : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        TACO_SKIP_WITHOUT_GPU();
        decoder_ = testing_util::load_on(testing_util::models_root() + "/" + GetParam(), Device::kCuda, std::nullopt);
        ASSERT_TRUE(decoder_);
    }
    KvCacheTensors device_kv(int64_t num_blocks, const ForwardExecutor& executor) {
        return KvCacheTensors::allocate(decoder_->config(), num_blocks, 16, executor.activation_dtype(),
                                        MemoryKind::kDevice);
    }
    std::unique_ptr<Decoder> decoder_;
};

TEST_P(CudaExecutor, AForwardPassAfterWarmUpAllocatesNothing) {
    ExecutorOptions options;
    options.max_num_tokens = 48;
    options.max_num_sequences = 4;
    options.max_model_len = 64;
    ForwardExecutor executor(*decoder_, options);
    EXPECT_EQ(executor.device(), Device::kCuda);
    EXPECT_EQ(executor.activation_dtype(), decoder_->weight_dtype());
    KvCacheTensors kv = device_kv(16, executor);
    const int64_t vocab = decoder_->config().vocab_size;
    const auto a = ids_of(40, 1, vocab), b = ids_of(30, 2, vocab);
    const std::vector<int32_t> table_a = {0, 1, 2}, table_b = {3, 4};
    RunnerSequence pa{a, 0, 24, table_a, true}, pb{b, 0, 24, table_b, true};
    pb.num_prompt_logits = 8;
    const RunnerSequence prefill[] = {pa, pb};
    executor.execute(prefill, kv);
    executor.host_logits();  // the pinned rows buffer reaches its size here
    const size_t workspace_bytes = executor.workspace().capacity_bytes();
    const int64_t allocations = total_num_allocations();
    for (int64_t step = 0; step < 4; ++step) {
        RunnerSequence da{a, 24 + step, 1, table_a, true}, db{b, 24 + step, 1, table_b, true};
        const RunnerSequence decode[] = {da, db};
        executor.execute(decode, kv, step % 2 == 0 ? 0 : 8);
        const TensorView host = executor.host_logits();
        EXPECT_EQ(host.size(0), 2);
        for (int64_t i = 0; i < host.numel(); ++i) ASSERT_TRUE(std::isfinite(host.as<float>()[i]));
    }
    RunnerSequence chunk{a, 28, 12, table_a, true};
    chunk.num_prompt_logits = 4;
    executor.execute({&chunk, 1}, kv);
    executor.host_logits();
    EXPECT_EQ(total_num_allocations(), allocations) << "a warmed-up forward pass allocated";
    EXPECT_EQ(executor.workspace().capacity_bytes(), workspace_bytes);
}

TEST_P(CudaExecutor, PaddingRowsChangeNoRealRowAndHostLogitsGatherRows) {
    ExecutorOptions options;
    options.max_num_tokens = 32;
    options.max_num_sequences = 2;
    options.max_model_len = 32;
    const auto ids = ids_of(12, 3, decoder_->config().vocab_size);
    const std::vector<int32_t> table = {0};
    auto run = [&](int64_t pad) {
        ForwardExecutor executor(*decoder_, options);
        KvCacheTensors kv = device_kv(2, executor);
        RunnerSequence prefill{ids, 0, 11, table, true};
        prefill.num_prompt_logits = 10;
        executor.execute({&prefill, 1}, kv, pad);
        std::vector<float> out = to_vector(executor.host_logits());
        // Rows in another order and with repeats: each the same bits as in the full copy.
        const std::vector<int64_t> rows = {10, 0, 1, 2, 7, 7};
        const TensorView gathered = executor.host_logits(rows);
        const int64_t vocab = gathered.shape[1];
        for (size_t r = 0; r < rows.size(); ++r)
            EXPECT_EQ(std::memcmp(gathered.row<float>(int64_t(r)), out.data() + rows[r] * vocab,
                                  size_t(vocab) * sizeof(float)),
                      0)
                << "gathered row " << r;
        RunnerSequence decode{ids, 11, 1, table, true};
        executor.execute({&decode, 1}, kv, pad);
        const std::vector<float> last = to_vector(executor.host_logits());
        out.insert(out.end(), last.begin(), last.end());
        return out;
    };
    // Padded to 16 rows: the prefill's 11 and the decode's 1 stay in the skinny GEMM's rows, whose bits do not depend
    // on M (a padded step past them may run cuBLASLt, whose row bits do: gemm_plan_cache.h).
    const auto plain = run(0), padded = run(16);
    ASSERT_EQ(plain.size(), padded.size());
    EXPECT_EQ(std::memcmp(plain.data(), padded.data(), plain.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaExecutor,
                         ::testing::Values("llama", "mixtral", "phimoe", "qwen2_moe", "gpt2", "falcon_alibi", "opt",
                                           "phi3_longrope", "gemma2", "bloom"));

// Workspace sizing by a dry run with a CUDA context: the ops see the device views of the batch, the device cache in
// the activation dtype and device logits, check them and touch nothing; the workspace is then device memory.
class CudaDryRun : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaDryRun, SizesTheDeviceWorkspaceOfEveryFamily) {
    TACO_SKIP_WITHOUT_GPU();
    auto decoder = testing_util::load_on(testing_util::models_root() + "/" + GetParam(), Device::kCuda, std::nullopt);
    ASSERT_TRUE(decoder);
    ExecutorOptions options;
    options.max_num_tokens = 256;
    options.max_num_sequences = 8;
    options.max_model_len = 128;
    ForwardExecutor executor(*decoder, options);
    KvCacheTensors kv =
        KvCacheTensors::allocate(decoder->config(), 1, 16, executor.activation_dtype(), MemoryKind::kDevice);
    const int64_t allocations = allocator_for(MemoryKind::kDevice).stats().num_allocations;
    executor.size_workspace(kv);
    EXPECT_TRUE(executor.workspace().sized());
    EXPECT_EQ(executor.workspace().device(), Device::kCuda);
    EXPECT_GE(executor.workspace().capacity_bytes(), executor.workspace().high_water_bytes());
    EXPECT_EQ(allocator_for(MemoryKind::kDevice).stats().num_allocations, allocations + 1);  // the workspace only
    executor.size_workspace(kv);                                                             // once
    EXPECT_EQ(allocator_for(MemoryKind::kDevice).stats().num_allocations, allocations + 1);
}

INSTANTIATE_TEST_SUITE_P(AllGoldenModels, CudaDryRun, ::testing::ValuesIn(testing_util::golden_model_names()),
                         [](const auto& info) { return info.param; });

class CudaRunner : public ::testing::Test {
protected:
    void SetUp() override { TACO_SKIP_WITHOUT_GPU(); }
    static std::string llama() { return testing_util::models_root() + "/llama"; }

    static std::unique_ptr<ModelRunner> runner(RunnerOptions options) {
        auto decoder = testing_util::load_on(llama(), Device::kCuda, std::nullopt);
        if (!decoder) return nullptr;
        auto made = ModelRunner::create(std::move(decoder), options);
        EXPECT_TRUE(made.is_ok()) << made.status().message();
        return made.is_ok() ? std::move(made).value() : nullptr;
    }
    static RunnerOptions small(int64_t device_blocks, int64_t host_blocks) {
        RunnerOptions options;
        options.num_device_blocks = device_blocks;
        options.num_host_blocks = host_blocks;
        options.max_num_batched_tokens = 64;
        options.max_num_seqs = 4;
        options.max_model_len = 64;
        return options;
    }
    // The bytes of one block (all layers, K and V) of a tier, read after the runner's streams are idle.
    static std::vector<uint8_t> block_bytes(const ModelRunner& r, bool host, int32_t block) {
        r.synchronize();
        const KvCacheTensors& kv = host ? r.host_kv() : r.device_kv();
        std::vector<uint8_t> out;
        for (size_t layer = 0; layer < kv.k.size(); ++layer) {
            for (const TensorView* t : {&kv.k[layer], &kv.v[layer]}) {
                const size_t n = t->nbytes() / size_t(kv.num_blocks);
                std::vector<uint8_t> bytes(n);
                EXPECT_EQ(cudaMemcpy(bytes.data(), static_cast<const uint8_t*>(t->data) + size_t(block) * n, n,
                                     cudaMemcpyDefault),
                          cudaSuccess);
                out.insert(out.end(), bytes.begin(), bytes.end());
            }
        }
        return out;
    }
};

TEST_F(CudaRunner, KvIsInTheActivationDtypeOnTheDeviceAndTheHostTierIsPinned) {
    auto r = runner(small(4, 2));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->device(), Device::kCuda);
    EXPECT_EQ(r->kv_dtype(), r->executor().activation_dtype());
    EXPECT_EQ(r->device_kv().memory(), MemoryKind::kDevice);
    EXPECT_EQ(r->host_kv().memory(), MemoryKind::kPinnedHost);
    EXPECT_EQ(r->kv_sizing().num_device_blocks, 4);
    EXPECT_EQ(r->kv_sizing().num_host_blocks, 2);
}

TEST_F(CudaRunner, HostTierRoundTripOnTheCopyStreamRestoresTheKvExactly) {
    auto r = runner(small(4, 2));
    ASSERT_TRUE(r);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 16; ++i) tokens.push_back(10 + i);
    const std::vector<int32_t> table = {1};
    RunnerSequence seq{tokens, 0, 16, table, true};
    r->execute({&seq, 1});
    tokens.push_back(99);
    // Decoding on the original block first: the logits a restored block must give.
    const std::vector<int32_t> original_table = {1, 2};
    RunnerSequence next{tokens, 16, 1, original_table, true};
    r->execute({&next, 1});
    const std::vector<float> want = to_vector(r->host_logits());
    const auto original = block_bytes(*r, false, 1);
    // Demote block 1 to host block 0 and overwrite it at once (the copy must read it before that forward pass),
    // then promote into device block 3 and decode on it at once (the pass must wait for the copy).
    const std::vector<KvCopy> demote = {{false, 1, true, 0}};
    r->copy_blocks(demote);
    const std::vector<int32_t> other(16, 7);
    RunnerSequence overwrite{other, 0, 16, table, true};
    r->execute({&overwrite, 1});
    EXPECT_EQ(block_bytes(*r, true, 0), original);
    EXPECT_NE(block_bytes(*r, false, 1), original);
    const std::vector<KvCopy> promote = {{true, 0, false, 3}};
    r->copy_blocks(promote);
    const std::vector<int32_t> restored_table = {3, 2};
    RunnerSequence restored{tokens, 16, 1, restored_table, true};
    r->execute({&restored, 1});
    const std::vector<float> got = to_vector(r->host_logits());
    EXPECT_EQ(block_bytes(*r, false, 3), original);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

TEST_F(CudaRunner, RunsOfConsecutiveBlocksCopyLikeOneAtATime) {
    auto r = runner(small(8, 8));
    ASSERT_TRUE(r);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 48; ++i) tokens.push_back(3 + i * 5 % 400);
    const std::vector<int32_t> table = {0, 1, 2};
    RunnerSequence seq{tokens, 0, 48, table, true};
    r->execute({&seq, 1});
    const std::vector<KvCopy> out = {{false, 0, true, 4}, {false, 1, true, 5}, {false, 2, true, 6}};
    const std::vector<KvCopy> back = {{true, 4, false, 5}, {true, 5, false, 6}, {true, 6, false, 7}};
    r->copy_blocks(out);
    r->copy_blocks(back);
    for (int32_t b = 0; b < 3; ++b) {
        EXPECT_EQ(block_bytes(*r, true, 4 + b), block_bytes(*r, false, b)) << "host block " << 4 + b;
        EXPECT_EQ(block_bytes(*r, false, 5 + b), block_bytes(*r, false, b)) << "device block " << 5 + b;
    }
}

// The GPU rule: after the runner allocates its KV cache this process uses about utilization x total of the GPU.
TEST_F(CudaRunner, GpuRuleFillsTheUtilizationShareOfTheGpu) {
    const cuda::DeviceMemory before = cuda::device_memory();
    auto decoder = testing_util::load_on(llama(), Device::kCuda, std::nullopt);
    ASSERT_TRUE(decoder);
    RunnerOptions options = small(0, 0);
    options.gpu_memory_utilization = 0.3;
    options.device_free_bytes_before_load = int64_t(before.free_bytes);
    auto made = ModelRunner::create(std::move(decoder), options);
    ASSERT_TRUE(made.is_ok()) << made.status().message();
    const cuda::DeviceMemory after = cuda::device_memory();
    const double used = double(before.free_bytes) - double(after.free_bytes);
    const double share = 0.3 * double(after.total_bytes);
    const double block = double((*made)->kv_sizing().bytes_per_block);
    // cudaMalloc rounds the KV cache (one allocation, its 2 x layers tensors 256-byte aligned) up to its 2 MiB
    // pages; nothing else may be off. The slack is that of one allocation per tensor, which it was.
    const double slack = 2.0 * double((*made)->device_kv().k.size()) * double(2 << 20) + block;
    EXPECT_LE(used, share + slack);
    EXPECT_GE(used, share - slack);
    EXPECT_GT((*made)->kv_sizing().num_device_blocks, 1000);
}

TEST_F(CudaRunner, GpuRuleErrorsNameTheNumbers) {
    RunnerOptions options = small(0, 0);
    options.device_free_bytes_before_load = int64_t(cuda::device_memory().free_bytes);
    options.gpu_memory_utilization = 1e-5;  // ~1.4 MB: less than the GEMM workspace alone
    auto decoder = testing_util::load_on(llama(), Device::kCuda, std::nullopt);
    ASSERT_TRUE(decoder);
    auto tiny = ModelRunner::create(std::move(decoder), options);
    ASSERT_FALSE(tiny.is_ok());
    EXPECT_NE(tiny.status().message().find("too few for one request of --max-model-len 64"), std::string::npos)
        << tiny.status().message();
    EXPECT_NE(tiny.status().message().find("raise --gpu-memory-utilization"), std::string::npos);
    // All of the GPU: the CUDA context already holds some of it, so less than that was free at start.
    options.gpu_memory_utilization = 1.0;
    decoder = testing_util::load_on(llama(), Device::kCuda, std::nullopt);
    ASSERT_TRUE(decoder);
    auto all = ModelRunner::create(std::move(decoder), options);
    ASSERT_FALSE(all.is_ok());
    EXPECT_NE(all.status().message().find("were free when this process started"), std::string::npos)
        << all.status().message();
}

TEST_F(CudaRunner, PerplexityInFloat32AgreesWithTheCpu) {
    auto cpu = testing_util::load_on(llama(), Device::kCpu, std::nullopt);
    auto gpu = testing_util::load_on(llama(), Device::kCuda, DType::kF32);
    ASSERT_TRUE(cpu && gpu);
    const auto ids = ids_of(100, 5, cpu->config().vocab_size);
    PerplexityOptions options;
    options.window = 64;
    options.stride = 32;
    options.forward_chunk_tokens = 24;
    auto want = sliding_window_perplexity(*cpu, ids, options);
    auto got = sliding_window_perplexity(*gpu, ids, options);
    ASSERT_TRUE(want.is_ok() && got.is_ok());
    EXPECT_EQ(got->num_scored_tokens, want->num_scored_tokens);
    EXPECT_NEAR(got->mean_nll(), want->mean_nll(), 1e-4);
}

}  // namespace
}  // namespace taco
