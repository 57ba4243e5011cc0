#include "exec/kv_sizing.h"

#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "model/kv_cache_tensors.h"

namespace taco {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ModelConfig small_model() {
    ModelConfig model;
    model.num_hidden_layers = 3;
    model.num_key_value_heads = 2;
    model.head_dim = 8;
    return model;
}

// 3 layers x K,V x 16 tokens x 2 heads x 8 dims.
constexpr int64_t kF32BlockBytes = 3 * 2 * 16 * 2 * 8 * 4;

KvSizingConfig small_config() {
    KvSizingConfig config = KvSizingConfig::for_model(small_model(), 16);
    config.max_model_len = 100;  // 7 blocks of 16
    config.max_num_seqs = 4;
    return config;
}

std::string error_of(const std::function<void(KvSizingConfig&)>& edit) {
    KvSizingConfig config = small_config();
    edit(config);
    auto sizing = size_kv_cache(config);
    return sizing.is_ok() ? "<ok>" : sizing.status().message();
}

TEST(KvSizing, BytesPerBlockAreKAndVOfEveryLayer) {
    EXPECT_EQ(kv_bytes_per_block(small_config()), kF32BlockBytes);
    EXPECT_EQ(kv_bytes_per_block(small_model(), 16), kF32BlockBytes);
    EXPECT_EQ(kv_bytes_per_block(small_model(), 32), 2 * kF32BlockBytes);
}

TEST(KvSizing, BytesPerBlockFollowTheCacheDtype) {
    EXPECT_EQ(kv_bytes_per_block(small_model(), 16, DType::kBF16), kF32BlockBytes / 2);
    EXPECT_EQ(kv_bytes_per_block(small_model(), 16, DType::kF16), kF32BlockBytes / 2);
    EXPECT_EQ(kv_bytes_per_block(small_model(), 16, DType::kF8E4M3), kF32BlockBytes / 4);
}

TEST(KvSizing, BytesPerBlockMatchTheAllocatedCache) {
    const ModelConfig model = small_model();
    const int64_t num_blocks = 5;
    KvCacheTensors kv = KvCacheTensors::allocate(model, num_blocks, 16);
    size_t total = 0;
    for (size_t layer = 0; layer < kv.k.size(); ++layer) total += kv.k[layer].nbytes() + kv.v[layer].nbytes();
    EXPECT_EQ(int64_t(total), num_blocks * kv_bytes_per_block(model, 16));
}

TEST(KvSizing, DeviceBlocksFillTheBudget) {
    KvSizingConfig config = small_config();
    config.max_num_seqs = 1 << 20;  // no cap from the requests
    config.kv_cache_gb = 0.001;
    auto sizing = size_kv_cache(config);
    ASSERT_TRUE(sizing.is_ok()) << sizing.status().message();
    EXPECT_EQ(sizing->bytes_per_block, kF32BlockBytes);
    EXPECT_EQ(sizing->blocks_per_seq, 7);
    EXPECT_EQ(sizing->num_device_blocks, int64_t(std::floor(0.001 * kGiB / double(kF32BlockBytes))));
    EXPECT_EQ(sizing->num_host_blocks, 0);
}

TEST(KvSizing, NoBudgetMeansFourGiB) {
    KvSizingConfig config = small_config();
    config.max_num_seqs = 1 << 30;
    auto sizing = size_kv_cache(config);
    ASSERT_TRUE(sizing.is_ok()) << sizing.status().message();
    EXPECT_EQ(sizing->num_device_blocks, int64_t(4 * kGiB) / kF32BlockBytes);
}

TEST(KvSizing, HalfTheBytesPerElementHoldTwiceTheBlocks) {
    KvSizingConfig config = small_config();
    config.num_layers = 2;  // 4096-byte f32 blocks: whole numbers of both sizes fit the budgets
    config.max_num_seqs = 1 << 20;
    config.kv_cache_gb = 0.5;
    config.host_cache_gb = 0.25;
    auto f32 = size_kv_cache(config);
    config.kv_dtype = DType::kBF16;
    auto bf16 = size_kv_cache(config);
    ASSERT_TRUE(f32.is_ok() && bf16.is_ok());
    EXPECT_EQ(bf16->num_device_blocks, 2 * f32->num_device_blocks);
    EXPECT_EQ(bf16->num_host_blocks, 2 * f32->num_host_blocks);
    EXPECT_EQ(f32->bytes_per_block, 4096);
    EXPECT_EQ(bf16->bytes_per_block, 2048);
    EXPECT_EQ(f32->num_host_blocks, int64_t(0.25 * kGiB) / 4096);
}

TEST(KvSizing, DeviceBlocksAreCappedAtWhatTheRequestsCanUse) {
    KvSizingConfig config = small_config();  // 4 requests x 7 blocks
    config.kv_cache_gb = 1;
    auto sizing = size_kv_cache(config);
    ASSERT_TRUE(sizing.is_ok()) << sizing.status().message();
    EXPECT_EQ(sizing->num_device_blocks, 28);
}

TEST(KvSizing, ExplicitBlockCountsOverrideTheBudgets) {
    KvSizingConfig config = small_config();
    config.kv_cache_gb = 1;
    config.host_cache_gb = 1;
    config.num_device_blocks = 1000;  // past the cap of 28: an explicit count is not capped
    config.num_host_blocks = 0;
    auto sizing = size_kv_cache(config);
    ASSERT_TRUE(sizing.is_ok()) << sizing.status().message();
    EXPECT_EQ(sizing->num_device_blocks, 1000);
    EXPECT_EQ(sizing->num_host_blocks, 0);
}

TEST(KvSizing, TooFewBlocksForOneRequestNameTheFlags) {
    const std::string budget = error_of([](KvSizingConfig& c) { c.kv_cache_gb = 1e-6; });
    EXPECT_NE(budget.find("too few for one request of --max-model-len 100"), std::string::npos) << budget;
    EXPECT_NE(budget.find("raise --kv-cache-gb"), std::string::npos) << budget;
    EXPECT_EQ(error_of([](KvSizingConfig& c) { c.num_device_blocks = 6; }),
              "the KV cache holds 6 blocks of 16 tokens, too few for one request of --max-model-len 100 "
              "(raise --kv-cache-gb or lower --max-model-len)");
    EXPECT_EQ(error_of([](KvSizingConfig& c) { c.num_device_blocks = 7; }), "<ok>");
}

// An H200-like GPU: 140 GiB, 139 free at start; the process uses 20 GiB without the KV cache.
GpuMemoryBudget gpu_budget(double utilization = 0.9) {
    GpuMemoryBudget gpu;
    gpu.utilization = utilization;
    gpu.total_bytes = int64_t(140 * kGiB);
    gpu.free_bytes_at_start = int64_t(139 * kGiB);
    gpu.used_bytes = int64_t(20 * kGiB);
    return gpu;
}

TEST(KvSizing, GpuBlocksAreTheUtilizationOfTheTotalLessWhatTheProcessUses) {
    KvSizingConfig config = small_config();  // 4 requests x 7 blocks: the GPU rule is not capped by them
    config.kv_dtype = DType::kBF16;
    config.gpu = gpu_budget(0.9);
    auto sizing = size_kv_cache(config);
    ASSERT_TRUE(sizing.is_ok()) << sizing.status().message();
    const int64_t bytes = kF32BlockBytes / 2;
    EXPECT_EQ(sizing->bytes_per_block, bytes);
    EXPECT_EQ(sizing->num_device_blocks, int64_t(std::floor((0.9 * 140 - 20) * kGiB / double(bytes))));
    config.gpu->utilization = 0.5;
    EXPECT_EQ(size_kv_cache(config)->num_device_blocks, int64_t(std::floor((0.5 * 140 - 20) * kGiB / double(bytes))));
}

TEST(KvSizing, KvCacheGbAndExplicitBlocksWinOverTheGpuRule) {
    KvSizingConfig config = small_config();
    config.max_num_seqs = 1 << 20;
    config.gpu = gpu_budget();
    config.kv_cache_gb = 0.001;
    EXPECT_EQ(size_kv_cache(config)->num_device_blocks, int64_t(std::floor(0.001 * kGiB / double(kF32BlockBytes))));
    config.num_device_blocks = 9;
    EXPECT_EQ(size_kv_cache(config)->num_device_blocks, 9);
}

TEST(KvSizing, GpuRuleTooSmallForOneRequestNamesTheNumbersAndTheFlags) {
    KvSizingConfig config = small_config();  // one request of 100 tokens: 7 blocks of 1536 bytes
    config.gpu = gpu_budget(0.9);
    config.gpu->used_bytes = int64_t(0.9 * 140 * kGiB) - 6 * kF32BlockBytes;  // room for 6 blocks
    const auto sizing = size_kv_cache(config);
    ASSERT_FALSE(sizing.is_ok());
    const std::string& message = sizing.status().message();
    for (const char* part : {"--gpu-memory-utilization 0.9 lets this process use 126.00 GiB of the GPU's 140.00 GiB",
                             "leaving 0.00 GiB for the KV cache: 6 blocks of 16 tokens",
                             "too few for one request of --max-model-len 100 (7 blocks",
                             "Lower --max-model-len or raise --gpu-memory-utilization"})
        EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
    config.gpu->used_bytes -= kF32BlockBytes;  // 7 blocks fit
    EXPECT_EQ(size_kv_cache(config)->num_device_blocks, 7);
    config.gpu->used_bytes = int64_t(200 * kGiB);  // more than the share: no blocks, same error
    EXPECT_FALSE(size_kv_cache(config).is_ok());
}

TEST(KvSizing, GpuRuleNeedsTheRequestedShareFreeAtStart) {
    KvSizingConfig config = small_config();
    config.gpu = gpu_budget(0.95);
    config.gpu->free_bytes_at_start = int64_t(100 * kGiB);  // another process holds 40 GiB
    const auto sizing = size_kv_cache(config);
    ASSERT_FALSE(sizing.is_ok());
    EXPECT_EQ(sizing.status().message(),
              "only 100.00 GiB of the GPU's 140.00 GiB were free when this process started, less than "
              "--gpu-memory-utilization 0.95 asks for (133.00 GiB): lower --gpu-memory-utilization or free the GPU "
              "memory other processes hold");
    config.gpu->utilization = 0.7;  // 98 GiB: fits
    EXPECT_TRUE(size_kv_cache(config).is_ok());
}

TEST(KvSizing, GpuUtilizationOutsideZeroToOneIsAnError) {
    for (double bad : {0.0, -0.1, 1.01, double(NAN)}) {
        const std::string message = error_of([&](KvSizingConfig& c) { c.gpu = gpu_budget(bad); });
        EXPECT_NE(message.find("--gpu-memory-utilization must be in (0, 1]"), std::string::npos) << message;
    }
    EXPECT_EQ(error_of([](KvSizingConfig& c) {
                  c.gpu = gpu_budget(1.0);
                  c.gpu->free_bytes_at_start = c.gpu->total_bytes;
              }),
              "<ok>");
}

TEST(KvSizing, BadFieldsAreErrorsNamingThem) {
    EXPECT_EQ(error_of([](KvSizingConfig&) {}), "<ok>");
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.num_layers = 0; }).find("num_layers"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.num_kv_heads = 0; }).find("num_kv_heads"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.head_dim = -1; }).find("head_dim"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.block_size = 0; }).find("--block-size"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.kv_dtype = DType::kI32; }).find("float type, got I32"),
              std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.kv_cache_gb = -1; }).find("--kv-cache-gb"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.kv_cache_gb = NAN; }).find("--kv-cache-gb"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.host_cache_gb = INFINITY; }).find("--swap-space (--host-cache-gb)"),
              std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.host_cache_gb = 1e300; }).find("--host-cache-gb"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.max_model_len = 0; }).find("--max-model-len"), std::string::npos);
    EXPECT_NE(error_of([](KvSizingConfig& c) { c.max_num_seqs = 0; }).find("--max-num-seqs"), std::string::npos);
}

}  // namespace
}  // namespace taco
