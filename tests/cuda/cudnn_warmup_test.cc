// cuDNN's attention plans built at start-up (TACO_CUDA_CUDNN_WARMUP=1, ModelRunner::warm_attention_plans): a runner
// made with the switch on has the plan of every (sequence-count bucket, query bucket) its limits allow, and a prefill
// step of any of them then builds none. The switch is read once per process, so this runs where the suite runs with it
// on (scripts/gpu_quick.sh's TACO_QUICK_OPT_INS); skipped without a GPU, without cuDNN, or where cuDNN has no engine
// for the test model's shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "exec/model_runner.h"
#include "golden_models.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/paged_attention.h"

namespace taco {
namespace {

TEST(CudnnWarmup, StartUpBuildsThePlanOfEveryBucket) {
    TACO_SKIP_WITHOUT_GPU();
    if (!cuda::cudnn_attention_warmup_enabled()) GTEST_SKIP() << "TACO_CUDA_CUDNN_WARMUP is not 1";
    if (!cuda::cudnn_attention_enabled()) GTEST_SKIP() << "TACO_CUDA_CUDNN_ATTENTION=0";
    if (const std::string why = cuda::cudnn_attention_unavailable(); !why.empty()) GTEST_SKIP() << why;
    auto decoder = testing_util::load_on(testing_util::models_root() + "/llama", Device::kCuda, DType::kBF16);
    ASSERT_TRUE(decoder);
    const int64_t vocab = decoder->config().vocab_size;
    RunnerOptions options;
    options.max_num_seqs = 8;
    options.max_num_batched_tokens = 1024;
    options.max_model_len = 1024;
    options.num_device_blocks = 197;  // a cache shape no other test has (plans are per cache shape)
    options.num_host_blocks = 0;
    const cuda::CudnnPlanCounts before = cuda::cudnn_attention_plan_counts();
    auto made = ModelRunner::create(std::move(decoder), options);
    ASSERT_TRUE(made.is_ok()) << made.status().message();
    ModelRunner& runner = *made.value();
    const cuda::CudnnPlanCounts started = cuda::cudnn_attention_plan_counts();
    if (started.plans == before.plans && started.refused > before.refused)
        GTEST_SKIP() << "cuDNN has no engine for the test model's shape";
    // 1, 2, 4 and 8 sequences x query buckets 256, 512 and 1024: every pair fits in 1,024 tokens.
    EXPECT_EQ(started.plans - before.plans, 12);

    // Three sequences, the longest chunk 300 tokens (buckets 4 and 512), one over a cached prefix.
    const std::vector<int32_t> a = testing_util::ids_of(300, 1, vocab), b = testing_util::ids_of(40, 2, vocab),
                               c = testing_util::ids_of(120, 3, vocab);
    const std::vector<int32_t> table_a = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18},
                               table_b = {20, 21, 22}, table_c = {30, 31, 32, 33, 34, 35, 36, 37};
    RunnerSequence sa{a, 0, 300, table_a, true}, sb{b, 0, 40, table_b, true}, sc{c, 0, 64, table_c, true};
    const RunnerSequence first[] = {sc};
    runner.execute(first);  // c's first 64 tokens: too short a chunk for cuDNN
    sc.num_computed_tokens = 64;
    sc.num_new_tokens = 56;
    const RunnerSequence step[] = {sa, sb, sc};
    runner.execute(step);
    runner.host_logits();
    const cuda::CudnnPlanCounts after = cuda::cudnn_attention_plan_counts();
    EXPECT_EQ(after.plans, started.plans);
    EXPECT_EQ(after.refused, started.refused);
}

}  // namespace
}  // namespace taco
