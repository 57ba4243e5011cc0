// DeviceBatchSampler against BatchSampler on a real GPU: for the same f32 logits and rows, every mode of the
// sampler (greedy, temperature, top-k, top-p, min-p and their combinations, penalties, logit_bias, suppressed ids,
// logprobs with 0..20 top entries and the sampled token's) gives the same tokens, the same top-logprob tokens and
// ranks, and logprobs within 1e-5 (relative above 1: CUDA's exp / log and glibc's may differ in the last bit of a
// double and the sums run in another order, so a float logprob can differ in its last bit). Skipped (with the
// reason) where no GPU or driver is usable, as on CI.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "cuda_test_util.h"
#include "exec/batch_sampler.h"
#include "exec/device_batch_sampler.h"
#include "exec/logits_sampler.h"
#include "kernels/cuda/cuda_backend.h"

namespace taco {
namespace {

using testing_util::to_device;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Context {
    std::vector<int32_t> prompt, output, suppressed;
};

// A draw with its params and token lists owned here (SamplingRow holds pointers and spans).
struct Draw {
    SamplingParams params;
    Context context;
    int64_t logits_row = 0;
    uint64_t seed = 0;
    int64_t draw_index = 0;
    bool sampled_logprob = false;
    std::vector<uint32_t> mask;  // a grammar mask ([ceil(vocab / 32)] words), or empty
};

std::vector<SamplingRow> rows_of(const std::vector<Draw>& draws) {
    std::vector<SamplingRow> rows;
    for (const Draw& d : draws) {
        SamplingRow row;
        row.logits_row = d.logits_row;
        row.params = &d.params;
        row.seed = d.seed;
        row.draw_index = d.draw_index;
        row.prompt_ids = d.context.prompt;
        row.output_ids = d.context.output;
        row.suppressed_ids = d.context.suppressed;
        row.sampled_logprob = d.sampled_logprob;
        row.allowed_tokens = d.mask;
        rows.push_back(row);
    }
    return rows;
}

bool logprob_near(float got, float expected) {
    if (std::isnan(expected)) return std::isnan(got);
    if (std::isinf(expected)) return got == expected;
    return std::fabs(got - expected) <= 1e-5f * std::max(1.0f, std::fabs(expected));
}

// Logits [num_rows, vocab]: row r normal with a spread from peaked to flat, rows apart shifted.
Tensor random_logits(int64_t num_rows, int64_t vocab, uint32_t seed) {
    Tensor logits = Tensor::empty({num_rows, vocab}, DType::kF32);
    std::mt19937 rng(seed);
    for (int64_t r = 0; r < num_rows; ++r) {
        std::normal_distribution<float> normal(float(r % 5) - 2.0f, 0.4f + 1.3f * float(r % 7));
        float* row = logits.view().row<float>(r);
        for (int64_t i = 0; i < vocab; ++i) row[i] = normal(rng);
    }
    return logits;
}

// Every mode, on a vocabulary of `vocab` (token ids in the lists and biases are spread over it).
std::vector<Draw> every_mode(int64_t vocab, int64_t num_logits_rows) {
    const auto id = [&](int64_t i) { return int32_t(i % vocab); };
    std::vector<SamplingParams> params;
    auto add = [&](auto&& set) {
        SamplingParams p;
        set(p);
        params.push_back(p);
    };
    add([](SamplingParams& p) { p.temperature = 0; });
    add([](SamplingParams& p) {
        p.temperature = 0;
        p.logprobs = 5;
    });
    add([](SamplingParams& p) {
        p.temperature = 0;
        p.repetition_penalty = 1.5;
        p.frequency_penalty = 0.4;
    });
    add([](SamplingParams& p) { p.temperature = 1.0; });
    add([](SamplingParams& p) {
        p.temperature = 0.7;
        p.logprobs = 0;
    });
    add([](SamplingParams& p) { p.temperature = 1.6; });
    add([](SamplingParams& p) { p.temperature = 0.004; });  // raised to 0.01
    add([](SamplingParams& p) { p.temperature = 80; });
    add([](SamplingParams& p) { p.top_k = 1; });
    add([](SamplingParams& p) {
        p.top_k = 5;
        p.logprobs = 20;
    });
    add([](SamplingParams& p) {
        p.top_k = 50;
        p.temperature = 1.3;
    });
    add([&](SamplingParams& p) { p.top_k = vocab - 1; });
    add([&](SamplingParams& p) { p.top_k = vocab; });       // does not restrict
    add([&](SamplingParams& p) { p.top_k = vocab + 10; });  // neither
    add([](SamplingParams& p) { p.top_p = 0.9; });
    add([](SamplingParams& p) {
        p.top_p = 0.5;
        p.temperature = 2.0;
    });
    add([](SamplingParams& p) {
        p.top_p = 0.999;
        p.logprobs = 3;
    });
    add([](SamplingParams& p) { p.top_p = 0.01; });
    add([](SamplingParams& p) {
        p.top_p = 0.95;
        p.temperature = 4.0;
    });  // a wide nucleus: a large sort
    add([](SamplingParams& p) { p.min_p = 0.05; });
    add([](SamplingParams& p) {
        p.min_p = 0.5;
        p.temperature = 1.5;
    });
    add([](SamplingParams& p) { p.min_p = 1.0; });
    add([](SamplingParams& p) {
        p.top_k = 40;
        p.top_p = 0.9;
        p.min_p = 0.02;
        p.temperature = 0.8;
    });
    add([](SamplingParams& p) {
        p.top_k = 20;
        p.top_p = 0.8;
        p.temperature = 0.7;
        p.logprobs = 1;
    });  // Qwen's
    add([](SamplingParams& p) {
        p.top_k = 1000;
        p.min_p = 0.001;
        p.temperature = 3.0;
    });
    add([](SamplingParams& p) {
        p.repetition_penalty = 1.3;
        p.top_p = 0.9;
        p.logprobs = 2;
    });
    add([](SamplingParams& p) { p.repetition_penalty = 0.7; });
    add([](SamplingParams& p) {
        p.frequency_penalty = 0.5;
        p.presence_penalty = -1.0;
        p.top_k = 30;
    });
    add([](SamplingParams& p) {
        p.frequency_penalty = -2.0;
        p.presence_penalty = 2.0;
        p.min_p = 0.1;
    });
    add([&](SamplingParams& p) {
        p.logit_bias = {{id(3), 150.0f}, {id(77), -50.0f}, {id(5), 2.5f}, {-1, 9.0f}, {int32_t(vocab) + 3, 9.0f}};
    });
    add([&](SamplingParams& p) {
        p.logit_bias = {{id(11), 8.0f}, {id(12), 7.5f}}, p.top_p = 0.7, p.repetition_penalty = 1.1;
        p.logprobs = 4;
    });
    for (int64_t k = 0; k <= SamplingParams::kMaxLogprobs; ++k)
        add([&](SamplingParams& p) {
            p.logprobs = k;
            p.temperature = k % 3 == 0 ? 0.0 : 0.9;
            p.top_k = k * 4;
        });

    const std::vector<Context> contexts = {
        {},
        {{id(1), id(2), id(3), id(3), id(7), -5, int32_t(vocab)}, {id(7), id(8), id(8), id(8), id(9)}, {}},
        {{id(100), id(101)}, {id(3), id(5), id(5), int32_t(vocab) + 9}, {id(2), id(5), id(2), -1}},
        {{}, {}, {id(0), id(1), id(2), id(3)}},
    };
    std::vector<Draw> draws;
    int64_t i = 0;
    for (const SamplingParams& p : params)
        for (int seed = 0; seed < 3; ++seed, ++i) {
            Draw d;
            d.params = p;
            d.context = contexts[size_t(i) % contexts.size()];
            d.logits_row = i % num_logits_rows;
            d.seed = 1000 + uint64_t(i) * 7919;
            d.draw_index = i * 3;
            d.sampled_logprob = i % 4 == 1;
            draws.push_back(d);
        }
    return draws;
}

class DeviceBatchSamplerTest : public ::testing::Test {
protected:
    void SetUp() override {
        const Status status = cuda::init_backend(0);
        if (!status.is_ok()) GTEST_SKIP() << status.message();
        // A stream of our own rather than cuda::DeviceStream: the sampler needs no cuBLASLt handle.
        ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    }
    void TearDown() override {
        if (stream_ != nullptr) cudaStreamDestroy(stream_);
    }

    ExecContext ctx() const {
        ExecContext c;
        c.device = Device::kCuda;
        c.stream = stream_;
        return c;
    }

    // Samples `draws` from `host_logits` on the CPU and on the GPU and expects the same results.
    void expect_same_as_cpu(const Tensor& host_logits, const std::vector<Draw>& draws, const std::string& what) {
        const Tensor device_logits = to_device(host_logits);
        expect_same_as_cpu(host_logits.view(), device_logits.view(), draws, what);
    }

    void expect_same_as_cpu(const TensorView& host_logits, const TensorView& device_logits,
                            const std::vector<Draw>& draws, const std::string& what) {
        const std::vector<SamplingRow> rows = rows_of(draws);
        std::vector<SampledToken> expected(rows.size()), got(rows.size());
        BatchSampler().sample(host_logits, rows, expected);
        sampler_.sample(ctx(), device_logits, rows, got);
        int reported = 0;
        for (size_t i = 0; i < rows.size(); ++i) {
            const std::string difference = compare(got[i], expected[i]);
            if (difference.empty()) continue;
            ADD_FAILURE() << what << ", draw " << i << " (logits row " << draws[i].logits_row << "): " << difference;
            if (++reported == 10) return;
        }
    }

    // What differs between a device draw and the CPU's ("" if nothing).
    static std::string compare(const SampledToken& got, const SampledToken& expected) {
        std::string diff;
        auto note = [&](const std::string& what, double g, double e) {
            diff += what + " " + std::to_string(g) + " vs " + std::to_string(e) + "; ";
        };
        if (got.token != expected.token) note("token", got.token, expected.token);
        if (got.logprobs.has_value() != expected.logprobs.has_value())
            return diff + "logprobs present " + std::to_string(got.logprobs.has_value()) + " vs " +
                   std::to_string(expected.logprobs.has_value());
        if (!expected.logprobs) return diff;
        const SampleLogprobs& g = *got.logprobs;
        const SampleLogprobs& e = *expected.logprobs;
        if (g.sampled.token != e.sampled.token) note("sampled token", g.sampled.token, e.sampled.token);
        if (!logprob_near(g.sampled.logprob, e.sampled.logprob))
            note("sampled logprob", g.sampled.logprob, e.sampled.logprob);
        if (g.sampled_rank != e.sampled_rank) note("rank", double(g.sampled_rank), double(e.sampled_rank));
        if (g.top.size() != e.top.size()) return diff + "top sizes differ";
        for (size_t k = 0; k < e.top.size(); ++k) {
            if (g.top[k].token != e.top[k].token)
                note("top " + std::to_string(k) + " token", g.top[k].token, e.top[k].token);
            if (!logprob_near(g.top[k].logprob, e.top[k].logprob))
                note("top " + std::to_string(k) + " logprob", g.top[k].logprob, e.top[k].logprob);
        }
        return diff;
    }

    cudaStream_t stream_ = nullptr;
    DeviceBatchSampler sampler_;
};

TEST_F(DeviceBatchSamplerTest, EveryModeDrawsTheCpuSamplersTokensAndLogprobs) {
    for (int64_t vocab : {1000, 1001, 4099, 32000, 152064}) {
        const int64_t num_logits_rows = 7;
        const Tensor logits = random_logits(num_logits_rows, vocab, uint32_t(vocab));
        expect_same_as_cpu(logits, every_mode(vocab, num_logits_rows), "vocab " + std::to_string(vocab));
        if (HasFailure()) return;
    }
}

// Grammar masks (SamplingRow::allowed_tokens) on every mode: a few allowed tokens, half of them, one, the last ids
// of a vocabulary that is not a multiple of 32, and an all-zero mask (no mask, as BatchSampler has it); the logprobs
// read the masked row on both sides.
TEST_F(DeviceBatchSamplerTest, GrammarMasksDrawTheCpuSamplersTokensAndLogprobs) {
    for (int64_t vocab : {1001, 32000, 152064}) {
        const int64_t num_logits_rows = 5;
        const Tensor logits = random_logits(num_logits_rows, vocab, uint32_t(vocab) + 1);
        std::vector<Draw> draws = every_mode(vocab, num_logits_rows);
        const size_t words = size_t(vocab + 31) / 32;
        std::mt19937 rng{uint32_t(vocab)};
        for (size_t i = 0; i < draws.size(); ++i) {
            if (i % 6 == 5) continue;  // some draws stay unmasked beside the masked ones
            std::vector<uint32_t> mask(words, 0u);
            const auto allow = [&](int64_t t) { mask[size_t(t / 32)] |= 1u << (t % 32); };
            switch (i % 6) {
                case 0:
                    for (int k = 0; k < 7; ++k) allow(int64_t(rng() % uint64_t(vocab)));
                    break;
                case 1:
                    for (int64_t t = 0; t < vocab; t += 2) allow(t);
                    break;
                case 2: allow(int64_t(rng() % uint64_t(vocab))); break;
                case 3:
                    for (int64_t t = vocab - 40; t < vocab; ++t) allow(t);
                    break;
                case 4: break;  // allows nothing: no mask
            }
            draws[i].mask = mask;
        }
        expect_same_as_cpu(logits, draws, "masked, vocab " + std::to_string(vocab));
        if (HasFailure()) return;
    }
}

TEST_F(DeviceBatchSamplerTest, ManyStepsOfOneSeededRowRepeatTheCpuDraws) {
    const int64_t vocab = 32000;
    const Tensor logits = random_logits(3, vocab, 3);
    for (int64_t step = 0; step < 60; ++step) {
        std::vector<Draw> draws(4);
        draws[0].params.top_p = 0.9;
        draws[1].params.temperature = 0.8;
        draws[2].params.min_p = 0.05, draws[2].params.top_k = 200;
        draws[3].params.top_p = 0.6, draws[3].params.temperature = 1.7;
        for (size_t i = 0; i < draws.size(); ++i) {
            draws[i].seed = 42 + i;
            draws[i].draw_index = step;
            draws[i].logits_row = int64_t(i) % 3;
        }
        expect_same_as_cpu(logits, draws, "step " + std::to_string(step));
        if (HasFailure()) return;
    }
}

TEST_F(DeviceBatchSamplerTest, DrawsSharingALogitsRowAndManyRows) {
    const int64_t vocab = 32000, num_logits_rows = 300;
    const Tensor logits = random_logits(num_logits_rows, vocab, 17);
    std::vector<Draw> draws;
    // n = 8 samples of one prompt row: other seeds, same logits.
    for (int i = 0; i < 8; ++i) {
        Draw d;
        d.params.top_p = 0.92, d.params.temperature = 0.9, d.params.logprobs = 2;
        d.logits_row = 5;
        d.seed = 500 + uint64_t(i);
        draws.push_back(d);
    }
    // Then one draw per row, modes mixed.
    const std::vector<Draw> modes = every_mode(vocab, 1);
    for (int64_t r = 0; r < num_logits_rows; ++r) {
        Draw d = modes[size_t(r * 13) % modes.size()];
        d.logits_row = r;
        d.seed = uint64_t(r) * 31 + 7;
        d.draw_index = r;
        draws.push_back(d);
    }
    expect_same_as_cpu(logits, draws, "many rows");
}

TEST_F(DeviceBatchSamplerTest, TiesNanInfinitiesAndEqualWeights) {
    const int64_t vocab = 5003, num_rows = 8;
    Tensor logits = Tensor::empty({num_rows, vocab}, DType::kF32);
    std::mt19937 rng(9);
    for (int64_t i = 0; i < vocab; ++i) {
        logits.view().row<float>(0)[i] = float(int(rng() % 6)) * 0.5f;  // few levels: ties at every edge
        logits.view().row<float>(1)[i] = i % 7 == 0 ? std::numeric_limits<float>::quiet_NaN() : float(rng() % 100) / 10;
        logits.view().row<float>(2)[i] = i % 3 == 0 ? -kInf : float(rng() % 10);
        logits.view().row<float>(3)[i] = -kInf;                            // nothing to draw from
        logits.view().row<float>(4)[i] = i == 4000 || i == 17 ? kInf : 1;  // +inf outweighs everything
        logits.view().row<float>(5)[i] = std::numeric_limits<float>::quiet_NaN();
        // Distinct logits a rounding apart: their weights are all exactly 1, so TokenFilter orders them by id.
        logits.view().row<float>(6)[i] = float((i * 7919) % 1009) * 1e-30f;
        logits.view().row<float>(7)[i] = i % 2 ? 0.0f : -0.0f;  // -0 equals +0
    }
    std::vector<Draw> draws;
    for (int64_t r = 0; r < num_rows; ++r) {
        const std::vector<Draw> modes = every_mode(vocab, 1);
        for (size_t m = 0; m < modes.size(); m += 2) {
            Draw d = modes[m];
            d.logits_row = r;
            d.seed = uint64_t(r * 1000 + int64_t(m));
            draws.push_back(d);
        }
    }
    expect_same_as_cpu(logits, draws, "special rows");
}

// Where the filters cut matters: Zipf-like rows (as a language model's), whose nucleus for a small top_p holds a few
// tokens, each likely to be drawn, and a row whose tokens sit around the min_p edge; many seeds each, so a token
// kept or dropped by mistake shows.
TEST_F(DeviceBatchSamplerTest, NucleusAndMinPEdgesOverManySeeds) {
    const int64_t vocab = 32000;
    Tensor logits = Tensor::empty({3, vocab}, DType::kF32);
    std::mt19937 rng(77);
    std::vector<int32_t> ranks(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) ranks[size_t(i)] = int32_t(i);
    std::shuffle(ranks.begin(), ranks.end(), rng);
    std::uniform_real_distribution<float> edge(-2e-3f, 2e-3f);
    for (int64_t i = 0; i < vocab; ++i) {
        logits.view().row<float>(0)[i] = -1.1f * std::log(1.0f + float(ranks[size_t(i)]));
        logits.view().row<float>(1)[i] = i == 0 ? 0.0f : std::log(0.1f) + edge(rng);  // weights around min_p 0.1
        logits.view().row<float>(2)[i] = -0.6f * std::log(1.0f + float(ranks[size_t(vocab - 1 - i)]));
    }
    std::vector<Draw> draws;
    auto add = [&](int64_t row, const SamplingParams& params) {
        for (uint64_t seed = 0; seed < 40; ++seed) {
            Draw d;
            d.params = params;
            d.logits_row = row;
            d.seed = seed * 131 + uint64_t(row);
            d.draw_index = int64_t(seed);
            draws.push_back(d);
        }
    };
    for (int64_t row : {0, 2})
        for (double top_p : {0.2, 0.5, 0.7, 0.85, 0.95, 0.99})
            for (double temperature : {0.8, 1.0, 1.5}) {
                SamplingParams p;
                p.top_p = top_p;
                p.temperature = temperature;
                add(row, p);
            }
    SamplingParams min_p;
    min_p.min_p = 0.1;
    add(1, min_p);
    min_p.top_p = 0.5;
    add(1, min_p);
    min_p.top_p = 1.0;
    min_p.top_k = 100;
    add(1, min_p);
    expect_same_as_cpu(logits, draws, "edges");
}

TEST_F(DeviceBatchSamplerTest, RowStrideWiderThanTheVocabulary) {
    const int64_t vocab = 3000, width = 3072, num_rows = 4;
    const Tensor wide = random_logits(num_rows, width, 23);
    const Tensor device_wide = to_device(wide.view());
    std::vector<Draw> draws = every_mode(vocab, num_rows);
    expect_same_as_cpu(wide.view().slice(1, 0, vocab), device_wide.view().slice(1, 0, vocab), draws, "strided");
}

TEST_F(DeviceBatchSamplerTest, SteadyStateAllocatesNothing) {
    const int64_t vocab = 32000;
    const Tensor logits = random_logits(6, vocab, 5);
    const Tensor device_logits = to_device(logits.view());
    const std::vector<Draw> draws = every_mode(vocab, 6);
    const std::vector<SamplingRow> rows = rows_of(draws);
    std::vector<SampledToken> out(rows.size());
    sampler_.sample(ctx(), device_logits.view(), rows, out);  // sizes the scratch
    const size_t held = sampler_.device_bytes();
    const AllocationStats device_before = allocator_for(MemoryKind::kDevice).stats();
    const AllocationStats pinned_before = allocator_for(MemoryKind::kPinnedHost).stats();
    for (int step = 0; step < 5; ++step) {
        // The same step, and smaller ones.
        const size_t n = rows.size() - size_t(step) * 7;
        sampler_.sample(ctx(), device_logits.view(), std::span<const SamplingRow>(rows.data(), n),
                        std::span<SampledToken>(out.data(), n));
    }
    EXPECT_EQ(allocator_for(MemoryKind::kDevice).stats().num_allocations, device_before.num_allocations);
    EXPECT_EQ(allocator_for(MemoryKind::kPinnedHost).stats().num_allocations, pinned_before.num_allocations);
    EXPECT_EQ(sampler_.device_bytes(), held);
}

TEST_F(DeviceBatchSamplerTest, ReserveTakesTheScratchBeforeTheFirstStep) {
    const int64_t vocab = 32000;
    const Tensor logits = random_logits(6, vocab, 6);
    const Tensor device_logits = to_device(logits.view());
    const std::vector<Draw> draws = every_mode(vocab, 6);
    const std::vector<SamplingRow> rows = rows_of(draws);
    DeviceBatchSampler sampler;
    sampler.reserve(int64_t(rows.size()), vocab);
    EXPECT_GE(sampler.device_bytes(), rows.size() * size_t(vocab) * 20);
    const int64_t before = allocator_for(MemoryKind::kDevice).stats().num_allocations;
    std::vector<SampledToken> out(rows.size()), expected(rows.size());
    sampler.sample(ctx(), device_logits.view(), rows, out);
    EXPECT_LE(allocator_for(MemoryKind::kDevice).stats().num_allocations, before + 1);  // the upload buffer only
    BatchSampler().sample(logits.view(), rows, expected);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(compare(out[i], expected[i]), "") << "draw " << i;
}

TEST_F(DeviceBatchSamplerTest, LogitsSamplerPicksTheSamplerByWhereTheLogitsAre) {
    const int64_t vocab = 4096;
    const Tensor logits = random_logits(4, vocab, 8);
    const Tensor device_logits = to_device(logits.view());
    const std::vector<Draw> draws = every_mode(vocab, 4);
    const std::vector<SamplingRow> rows = rows_of(draws);
    std::vector<SampledToken> expected(rows.size()), from_host(rows.size()), from_device(rows.size());
    BatchSampler().sample(logits.view(), rows, expected);
    LogitsSampler sampler;
    sampler.sample(ExecContext::cpu(), logits.view(), rows, from_host);
    sampler.sample(ctx(), device_logits.view(), rows, from_device);
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(compare(from_host[i], expected[i]), "") << "host, draw " << i;
        EXPECT_EQ(compare(from_device[i], expected[i]), "") << "device, draw " << i;
    }
}

TEST_F(DeviceBatchSamplerTest, EmptyStepIsANoOp) { sampler_.sample(ctx(), TensorView(), {}, {}); }

TEST_F(DeviceBatchSamplerTest, RejectsHostLogitsAndRowsOutsideTheTensor) {
    const Tensor logits = random_logits(2, 100, 1);
    const Tensor device_logits = to_device(logits.view());
    const SamplingParams params;
    SamplingRow row;
    row.params = &params;
    SampledToken out;
    EXPECT_DEATH(
        sampler_.sample(ctx(), logits.view(), std::span<const SamplingRow>(&row, 1), std::span<SampledToken>(&out, 1)),
        "f32 device tensor");
    row.logits_row = 2;
    EXPECT_DEATH(sampler_.sample(ctx(), device_logits.view(), std::span<const SamplingRow>(&row, 1),
                                 std::span<SampledToken>(&out, 1)),
                 "logits row 2 of 2");
}

// Not a check: milliseconds per step of the device and the CPU sampler on a 152064-token vocabulary, for the
// record (run with --gtest_also_run_disabled_tests).
TEST_F(DeviceBatchSamplerTest, DISABLED_TimingOnALargeVocabulary) {
    const int64_t vocab = 152064;
    std::vector<std::pair<std::string, SamplingParams>> modes(6);
    modes[0].first = "greedy";
    modes[0].second.temperature = 0;
    modes[1].first = "temperature 1";
    modes[2].first = "top_p 0.95";
    modes[2].second.top_p = 0.95;
    modes[3].first = "top_k 20, top_p 0.8, T 0.7";
    modes[3].second.top_k = 20, modes[3].second.top_p = 0.8, modes[3].second.temperature = 0.7;
    modes[4].first = "greedy, 5 logprobs, penalties";
    modes[4].second.temperature = 0, modes[4].second.logprobs = 5, modes[4].second.repetition_penalty = 1.1;
    modes[5].first = "top_p 0.95, T 4 (flat)";
    modes[5].second.top_p = 0.95, modes[5].second.temperature = 4;
    for (int64_t num_rows : {1, 64, 256}) {
        const Tensor logits = random_logits(num_rows, vocab, 3);
        const Tensor device_logits = to_device(logits.view());
        for (const auto& [name, params] : modes) {
            std::vector<Draw> draws(static_cast<size_t>(num_rows));
            for (int64_t r = 0; r < num_rows; ++r) {
                draws[size_t(r)].params = params;
                draws[size_t(r)].logits_row = r;
                draws[size_t(r)].seed = uint64_t(r);
                draws[size_t(r)].context.prompt.assign(500, int32_t(r));
                draws[size_t(r)].context.output.assign(100, int32_t(r + 1));
            }
            const std::vector<SamplingRow> rows = rows_of(draws);
            std::vector<SampledToken> out(rows.size());
            auto time_ms = [&](auto&& run) {
                run();
                const auto start = std::chrono::steady_clock::now();
                const int iterations = 10;
                for (int i = 0; i < iterations; ++i) run();
                return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                       iterations;
            };
            const double device_ms = time_ms([&] { sampler_.sample(ctx(), device_logits.view(), rows, out); });
            BatchSampler cpu;
            const double cpu_ms = time_ms([&] { cpu.sample(logits.view(), rows, out); });
            std::printf("rows %4lld  %-30s device %8.3f ms  cpu %8.3f ms\n", (long long)num_rows, name.c_str(),
                        device_ms, cpu_ms);
        }
    }
}

}  // namespace
}  // namespace taco
