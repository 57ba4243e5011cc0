// The engine on a GPU under memory pressure: a KV pool too small for the batch (preemption and recomputation) and a
// host tier the evicted prefix blocks move to and come back from (the copy stream), in both dtypes, give every
// request the tokens an unconstrained engine on the same GPU gives. Skipped where no GPU is usable.
#include <gtest/gtest.h>

#include <random>

#include "cuda_test_util.h"
#include "golden_models.h"

namespace taco {
namespace {

using testing_util::EngineSetup;

class CudaEngineStress : public ::testing::TestWithParam<DType> {
protected:
    void SetUp() override { TACO_SKIP_WITHOUT_GPU(); }
};

TEST_P(CudaEngineStress, PreemptionAndHostTierPrefixHitsKeepEveryRequestsTokens) {
    const std::string dir = testing_util::models_root() + "/llama";
    const auto golden = testing_util::load_golden_model("llama");
    EngineSetup roomy{Device::kCuda, GetParam()};
    roomy.max_model_len = 128;
    EngineSetup tight = roomy;
    tight.num_device_blocks = 16;  // two 40-token requests with 24 outputs at a time
    tight.num_host_blocks = 64;
    auto reference = testing_util::make_engine_on(dir, roomy);
    auto engine = testing_util::make_engine_on(dir, tight);
    ASSERT_TRUE(reference && engine);

    // Three rounds: A (12 requests over two shared prompts: preemption), B (other prompts: A's cached prefix
    // blocks are evicted to the host tier), A again (its prefixes come back from the host).
    std::mt19937 rng(11);
    auto round = [&](size_t first_case, int count) {
        std::vector<std::vector<int32_t>> prompts;
        for (int i = 0; i < count; ++i) {
            std::vector<int32_t> p = golden.cases.at((first_case + size_t(i % 2)) % golden.cases.size()).prompt_ids;
            p.push_back(int32_t(rng() % 500));
            prompts.push_back(std::move(p));
        }
        return prompts;
    };
    const auto a = round(0, 12), b = round(2, 6);
    for (const auto* prompts : {&a, &b, &a}) {
        const auto want = testing_util::greedy_tokens(*reference, *prompts, 20);
        const auto got = testing_util::greedy_tokens(*engine, *prompts, 20);
        for (size_t i = 0; i < prompts->size(); ++i) EXPECT_EQ(got[i], want[i]) << "request " << i;
    }
    const EngineStats stats = engine->stats();
    EXPECT_GT(stats.num_preemptions, 0);
    EXPECT_GT(stats.prefix_hits_host_tokens, 0);
    EXPECT_EQ(stats.kv_cache_usage, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaEngineStress, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return info.param == DType::kF32 ? "float32" : "bfloat16"; });

}  // namespace
}  // namespace taco
