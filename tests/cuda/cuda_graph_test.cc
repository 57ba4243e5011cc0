// CUDA graphs of decode steps on a real GPU: a replay gives the bits of the same bucket launched op by op (prefill
// before, growing contexts, every bucket size rounding), capture happens once per bucket and replays allocate
// nothing, graphs follow the cache they were captured over, and an engine's greedy tokens with graphs equal its
// tokens with --enforce-eager. Skipped where no GPU is usable.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda_test_util.h"
#include "exec/forward_executor.h"
#include "golden_models.h"

namespace taco {
namespace {

using testing_util::ids_of;

struct GraphCase {
    std::string model;
    std::optional<DType> dtype;
};

std::string case_name(const testing::TestParamInfo<GraphCase>& info) {
    return info.param.model + "_" + (info.param.dtype ? std::string(dtype_name(*info.param.dtype)) : "auto");
}

class CudaGraphs : public ::testing::TestWithParam<GraphCase> {
protected:
    void SetUp() override {
        TACO_SKIP_WITHOUT_GPU();
        decoder_ = testing_util::load_on(testing_util::models_root() + "/" + GetParam().model, Device::kCuda,
                                         GetParam().dtype);
        ASSERT_TRUE(decoder_);
    }

    ExecutorOptions options(GraphMode mode) const {
        ExecutorOptions o;
        o.max_num_tokens = 128;
        o.max_num_sequences = 8;
        o.max_model_len = 64;
        o.graph_mode = mode;
        o.cuda_graph_sizes = {1, 2, 4, 8};
        return o;
    }

    // Logits of a prefill and then 4 decode steps of num_seqs sequences, on the host, in order.
    std::vector<float> run(ForwardExecutor& executor, KvCacheTensors& kv, int64_t num_seqs) {
        const int64_t vocab = decoder_->config().vocab_size;
        std::vector<std::vector<int32_t>> ids, tables;
        for (int64_t i = 0; i < num_seqs; ++i) {
            ids.push_back(ids_of(40, int32_t(i + 1), vocab));
            tables.push_back({int32_t(3 * i), int32_t(3 * i + 1), int32_t(3 * i + 2)});
        }
        std::vector<float> out;
        auto keep = [&] {
            const TensorView l = executor.host_logits();
            out.insert(out.end(), l.as<float>(), l.as<float>() + l.numel());
        };
        std::vector<RunnerSequence> prefill;
        for (int64_t i = 0; i < num_seqs; ++i) prefill.push_back({ids[size_t(i)], 0, 9 + i, tables[size_t(i)], true});
        executor.execute(prefill, kv);
        keep();
        for (int64_t step = 0; step < 4; ++step) {
            std::vector<RunnerSequence> decode;
            for (int64_t i = 0; i < num_seqs; ++i)
                decode.push_back({ids[size_t(i)], 9 + i + step, 1, tables[size_t(i)], true});
            executor.execute(decode, kv);
            keep();
        }
        return out;
    }

    KvCacheTensors device_kv(const ForwardExecutor& executor) {
        return KvCacheTensors::allocate(decoder_->config(), 32, 16, executor.activation_dtype(), MemoryKind::kDevice);
    }

    std::unique_ptr<Decoder> decoder_;
};

TEST_P(CudaGraphs, AReplayHasTheBitsOfTheSameBucketLaunchedOpByOp) {
    for (int64_t num_seqs : {1, 3, 5, 8}) {
        SCOPED_TRACE(num_seqs);
        ForwardExecutor eager(*decoder_, options(GraphMode::kEagerBuckets));
        KvCacheTensors eager_kv = device_kv(eager);
        const std::vector<float> want = run(eager, eager_kv, num_seqs);

        ForwardExecutor graphs(*decoder_, options(GraphMode::kGraphs));
        KvCacheTensors kv = device_kv(graphs);
        EXPECT_EQ(graphs.capture_graphs(kv), 4);
        const std::vector<float> got = run(graphs, kv, num_seqs);
        EXPECT_EQ(graphs.graph_replays(), 4);  // every decode step, none of the prefill
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
    }
}

TEST_P(CudaGraphs, ReplaysAllocateNothingAndGraphsFollowTheCache) {
    ForwardExecutor executor(*decoder_, options(GraphMode::kGraphs));
    KvCacheTensors kv = device_kv(executor);
    executor.capture_graphs(kv);
    run(executor, kv, 2);  // the pinned logits rows reach their size
    const int64_t allocations = total_num_allocations();
    const std::vector<float> first = run(executor, kv, 2);
    EXPECT_EQ(total_num_allocations(), allocations) << "a replayed step allocated";
    // Another cache: the graphs of the first one write its blocks, so the executor captures again over this one, and
    // the steps compute the same logits (the same inputs at other addresses).
    KvCacheTensors other = device_kv(executor);
    const int64_t replays = executor.graph_replays();
    const std::vector<float> again = run(executor, other, 2);
    EXPECT_EQ(executor.graph_replays(), replays + 3);  // the first decode step captures, the others replay
    ASSERT_EQ(again.size(), first.size());
    EXPECT_EQ(std::memcmp(again.data(), first.data(), again.size() * sizeof(float)), 0);
}

// Llama-style, MoE (softmax top-k and sparsemixer), GPT-style learned positions, ALiBi, LongRoPE, sliding window and
// soft-capping: in the served dtype and in fp32.
INSTANTIATE_TEST_SUITE_P(Families, CudaGraphs,
                         ::testing::Values(GraphCase{"llama", DType::kBF16}, GraphCase{"llama", DType::kF32},
                                           GraphCase{"mixtral", DType::kBF16}, GraphCase{"phimoe", DType::kBF16},
                                           GraphCase{"gpt2", DType::kBF16}, GraphCase{"falcon_alibi", DType::kBF16},
                                           GraphCase{"phi3_longrope", DType::kBF16}, GraphCase{"gemma2", DType::kBF16},
                                           GraphCase{"qwen2_moe", DType::kF32}),
                         case_name);

class CudaGraphEngine : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { TACO_SKIP_WITHOUT_GPU(); }
};

TEST_P(CudaGraphEngine, GreedyTokensWithGraphsEqualTheEagerEngines) {
    const std::string dir = testing_util::models_root() + "/" + GetParam();
    std::vector<std::vector<int32_t>> prompts;
    for (int32_t i = 0; i < 6; ++i) prompts.push_back(ids_of(5 + 3 * i, i + 1, 100));
    testing_util::EngineSetup setup;
    setup.dtype = DType::kBF16;
    setup.max_num_seqs = 16;
    auto graphs = testing_util::make_engine_on(dir, setup);
    setup.enforce_eager = true;
    auto eager = testing_util::make_engine_on(dir, setup);
    ASSERT_TRUE(graphs && eager);
    EXPECT_EQ(testing_util::greedy_tokens(*graphs, prompts, 12), testing_util::greedy_tokens(*eager, prompts, 12));
}

INSTANTIATE_TEST_SUITE_P(Families, CudaGraphEngine,
                         ::testing::Values("llama", "mixtral", "gemma2", "qwen2", "llama_bias_tied",
                                           "phimoe_longrope"));

}  // namespace
}  // namespace taco
