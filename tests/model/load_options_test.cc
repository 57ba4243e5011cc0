// Decoder::load with LoadOptions on the CPU: --load-format dummy binds every family from config.json alone,
// deterministically per seed; --dtype converts the matrices (the bf16 model keeps the fp32 one's confident top-1);
// --dtype's spellings.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "batch_runner.h"
#include "core/allocator.h"
#include "golden_models.h"
#include "model/decoder.h"
#include "model/weight_placer.h"

namespace taco {
namespace {

std::vector<float> last_logits(Decoder& decoder, const std::vector<int32_t>& ids) {
    return testing_util::run_chunked(decoder, ids, 1 << 20, 16).back();
}

std::unique_ptr<Decoder> load_or_fail(const std::string& dir, const LoadOptions& options) {
    auto decoder = Decoder::load(dir, options);
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    return decoder.is_ok() ? std::move(decoder).value() : nullptr;
}

class LoadOptionsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LoadOptionsTest, DummyWeightsBindFromTheConfigAloneDeterministicallyPerSeed) {
    const auto golden = testing_util::load_golden_model(GetParam());
    LoadOptions options;
    options.dummy = true;
    options.dummy_seed = 7;
    auto a = load_or_fail(golden.dir, options);
    auto b = load_or_fail(golden.dir, options);
    options.dummy_seed = 8;
    auto c = load_or_fail(golden.dir, options);
    ASSERT_TRUE(a && b && c);
    const auto& ids = golden.cases.at(0).prompt_ids;
    const std::vector<float> la = last_logits(*a, ids), lb = last_logits(*b, ids), lc = last_logits(*c, ids);
    ASSERT_EQ(la.size(), size_t(a->config().vocab_size));
    for (float v : la) ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(la, lb);
    EXPECT_NE(la, lc);
}

TEST_P(LoadOptionsTest, Bfloat16MatricesKeepTheConfidentTopOne) {
    const auto golden = testing_util::load_golden_model(GetParam());
    LoadOptions options;
    options.dtype = DType::kBF16;
    auto bf16 = load_or_fail(golden.dir, options);
    ASSERT_TRUE(bf16);
    EXPECT_EQ(bf16->weight_dtype(), DType::kBF16);
    for (const auto& c : golden.cases) {
        const std::vector<float> logits = last_logits(*bf16, c.prompt_ids);
        ASSERT_EQ(logits.size(), c.last_logits.size());
        size_t want = 0, got = 0;
        for (size_t i = 1; i < logits.size(); ++i) {
            if (c.last_logits[i] > c.last_logits[want]) want = i;
            if (logits[i] > logits[got]) got = i;
        }
        float second = -INFINITY;
        for (size_t i = 0; i < logits.size(); ++i)
            if (i != want) second = std::max(second, c.last_logits[i]);
        if (c.last_logits[want] - second > 0.1f) {
            EXPECT_EQ(got, want) << "prompt of " << c.prompt_ids.size();
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllGoldenModels, LoadOptionsTest, ::testing::ValuesIn(testing_util::golden_model_names()),
                         [](const auto& info) { return info.param; });

TEST(ResolveDtype, AcceptsVllmSpellingsAndNamesABadOne) {
    EXPECT_FALSE(resolve_dtype("auto")->has_value());
    for (const char* s : {"bfloat16", "bf16"}) EXPECT_EQ(**resolve_dtype(s), DType::kBF16);
    for (const char* s : {"float16", "half", "fp16"}) EXPECT_EQ(**resolve_dtype(s), DType::kF16);
    for (const char* s : {"float32", "float", "fp32"}) EXPECT_EQ(**resolve_dtype(s), DType::kF32);
    auto bad = resolve_dtype("int8");
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("'int8'"), std::string::npos);
}

TEST(LoadOptions, CudaWithoutABuildOrDeviceIsAClearError) {
    const auto golden = testing_util::load_golden_model(testing_util::golden_model_names().at(0));
    LoadOptions options;
    options.device = Device::kCuda;
    options.dummy = true;
    auto decoder = Decoder::load(golden.dir, options);
#ifdef TACO_WITH_CUDA
    if (decoder.is_ok()) GTEST_SKIP() << "a GPU is present: the device path is tested in tests/cuda";
    EXPECT_NE(decoder.status().message().find("CUDA"), std::string::npos) << decoder.status().message();
#else
    ASSERT_FALSE(decoder.is_ok());
    EXPECT_NE(decoder.status().message().find("without CUDA"), std::string::npos) << decoder.status().message();
#endif
}

// A config within core/limits.h can still describe more weights than the machine holds (hidden_size 2^24: the embedding
// alone takes 32 TiB): loading checks the memory available before it allocates, and says so, instead of aborting
// (bad_alloc) or being killed once the pages are touched.
TEST(LoadOptions, DummyWeightsPastTheHostMemoryAreAnErrorNamingTheSizes) {
    if (host_available_bytes() < 0) GTEST_SKIP() << "the host's available memory cannot be read here";
    const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "taco_huge_dummy_config";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 1048576,
        "hidden_size": 16777216, "intermediate_size": 16777216, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"})";
    LoadOptions options;
    options.dummy = true;
    auto decoder = Decoder::load(dir.string(), options);
    ASSERT_FALSE(decoder.is_ok());
    EXPECT_NE(decoder.status().message().find("GiB of host memory available"), std::string::npos)
        << decoder.status().message();
}

TEST(LoadOptions, PlacingChecksTheRoomWhereTheWeightsGo) {
    if (host_available_bytes() < 0) GTEST_SKIP() << "the host's available memory cannot be read here";
    auto placer = WeightPlacer::create(Device::kCpu, DType::kBF16, false, 0);
    ASSERT_TRUE(placer.is_ok());
    EXPECT_TRUE((*placer)->check_room(1 << 20).is_ok());
    const Status past = (*placer)->check_room(size_t(1) << 60);
    ASSERT_FALSE(past.is_ok());
    EXPECT_NE(past.message().find("the weights take 1073741824.00 GiB in BF16 on the host"), std::string::npos)
        << past.message();
}

}  // namespace
}  // namespace taco
