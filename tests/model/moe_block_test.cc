// MoeBlock: the grouped expert GEMM against a per-token double-precision reference, bitwise batch invariance, the
// two checkpoint layouts, and binding errors. Weights come from an in-memory fake checkpoint.
#include "model/moe_block.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace taco {
namespace {

constexpr int64_t kHidden = 12, kInter = 8, kShared = 6, kExperts = 5;

// Named tensors handed out through a MoeWeightSource, remembering which were read.
struct FakeCheckpoint {
    std::map<std::string, Tensor> tensors;
    std::set<std::string> used;

    const Tensor& add_random(const std::string& name, std::initializer_list<int64_t> dims, std::mt19937& rng) {
        Tensor t = Tensor::empty(dims, DType::kF32);
        std::normal_distribution<float> normal(0.0f, 0.3f);
        for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = normal(rng);
        return tensors[name] = std::move(t);
    }

    MoeWeightSource source() {
        MoeWeightSource s;
        s.contains = [this](const std::string& name) { return tensors.count(name) > 0; };
        s.tensor = [this](const std::string& name) -> Result<TensorView> {
            auto it = tensors.find(name);
            if (it == tensors.end()) return error("tensor '{}' is missing", name);
            used.insert(name);
            return it->second.view();
        };
        s.matrix = [this](const std::string& name, int64_t rows, int64_t cols) -> Result<TensorView> {
            auto it = tensors.find(name);
            if (it == tensors.end()) return error("tensor '{}' is missing", name);
            const TensorView& v = it->second.view();
            if (v.ndim != 2 || v.shape[0] != rows || v.shape[1] != cols)
                return error("tensor '{}' has shape {}, expected [{}, {}]", name, v.shape_string(), rows, cols);
            used.insert(name);
            return v;
        };
        return s;
    }
};

MoeSpec mixtral_like_spec() {
    MoeSpec spec;
    spec.num_experts = kExperts;
    spec.top_k = 2;
    spec.intermediate_size = kInter;
    spec.sparse_layers = {true};
    return spec;
}

// Mixtral's per-expert names (w1 gate, w3 up, w2 down) under block_sparse_moe.
FakeCheckpoint per_expert_checkpoint(uint32_t seed, bool shared) {
    std::mt19937 rng(seed);
    FakeCheckpoint ckpt;
    const std::string p = "model.layers.0.block_sparse_moe.";
    ckpt.add_random(p + "gate.weight", {kExperts, kHidden}, rng);
    for (int e = 0; e < kExperts; ++e) {
        std::string x = p + "experts." + std::to_string(e) + ".";
        ckpt.add_random(x + "w1.weight", {kInter, kHidden}, rng);
        ckpt.add_random(x + "w3.weight", {kInter, kHidden}, rng);
        ckpt.add_random(x + "w2.weight", {kHidden, kInter}, rng);
    }
    if (shared) {
        ckpt.add_random(p + "shared_expert.gate_proj.weight", {kShared, kHidden}, rng);
        ckpt.add_random(p + "shared_expert.up_proj.weight", {kShared, kHidden}, rng);
        ckpt.add_random(p + "shared_expert.down_proj.weight", {kHidden, kShared}, rng);
        ckpt.add_random(p + "shared_expert_gate.weight", {1, kHidden}, rng);
    }
    return ckpt;
}

// The same weights in transformers 5's stacked layout under mlp.
FakeCheckpoint stacked_copy(const FakeCheckpoint& per_expert) {
    FakeCheckpoint out;
    const std::string from = "model.layers.0.block_sparse_moe.", to = "model.layers.0.mlp.";
    auto copy = [](const Tensor& src, float* dst) { std::copy_n(src.as<float>(), src.numel(), dst); };
    Tensor gate_up = Tensor::empty({kExperts, 2 * kInter, kHidden}, DType::kF32);
    Tensor down = Tensor::empty({kExperts, kHidden, kInter}, DType::kF32);
    for (int e = 0; e < kExperts; ++e) {
        std::string x = from + "experts." + std::to_string(e) + ".";
        copy(per_expert.tensors.at(x + "w1.weight"), gate_up.as<float>() + e * 2 * kInter * kHidden);
        copy(per_expert.tensors.at(x + "w3.weight"), gate_up.as<float>() + (e * 2 + 1) * kInter * kHidden);
        copy(per_expert.tensors.at(x + "w2.weight"), down.as<float>() + e * kHidden * kInter);
    }
    Tensor router = Tensor::empty({kExperts, kHidden}, DType::kF32);
    copy(per_expert.tensors.at(from + "gate.weight"), router.as<float>());
    out.tensors[to + "gate.weight"] = std::move(router);
    out.tensors[to + "experts.gate_up_proj"] = std::move(gate_up);
    out.tensors[to + "experts.down_proj"] = std::move(down);
    return out;
}

Tensor random_rows(int64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Tensor x = Tensor::empty({rows, kHidden}, DType::kF32);
    for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = normal(rng);
    return x;
}

Tensor run(const MoeBlock& block, const Tensor& x) {
    Tensor out = Tensor::empty({x.size(0), kHidden}, DType::kF32);
    Workspace ws;  // sized by a dry run, as a runner sizes its own
    ExecContext dry = ExecContext::cpu();
    dry.dry_run = true;
    block.forward(dry, ws, x, TensorView(), out);
    ws.reserve(ws.high_water_bytes());
    ws.reset();
    block.forward(ExecContext::cpu(), ws, x, TensorView(), out);
    return out;
}

// y = W v for a [rows, cols] f32 tensor, in double.
std::vector<double> matvec(const Tensor& w, const std::vector<double>& v) {
    std::vector<double> y(size_t(w.size(0)), 0.0);
    for (int64_t r = 0; r < w.size(0); ++r)
        for (int64_t c = 0; c < w.size(1); ++c) y[size_t(r)] += double(w.as<float>()[r * w.size(1) + c]) * v[size_t(c)];
    return y;
}

std::vector<double> swiglu_mlp(const Tensor& gate, const Tensor& up, const Tensor& down, const std::vector<double>& x) {
    auto g = matvec(gate, x), u = matvec(up, x);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return matvec(down, g);
}

// One token through the block, written from the Mixtral / Qwen2-MoE modeling code: softmax over all logits, top 2,
// optional renormalisation, weighted sum of the chosen experts, plus sigmoid(shared gate) * shared expert.
std::vector<double> reference(const FakeCheckpoint& ckpt, const float* token, bool renormalize, bool shared) {
    const std::string p = "model.layers.0.block_sparse_moe.";
    std::vector<double> x(token, token + kHidden);
    auto logits = matvec(ckpt.tensors.at(p + "gate.weight"), x);
    double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (double& l : logits) sum += l = std::exp(l - max);
    for (double& l : logits) l /= sum;
    int first = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    double p_first = logits[size_t(first)];
    logits[size_t(first)] = -1;
    int second = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    double p_second = logits[size_t(second)];
    double norm = renormalize ? p_first + p_second : 1.0;
    std::vector<double> out(size_t(kHidden), 0.0);
    for (auto [e, w] : {std::pair{first, p_first / norm}, std::pair{second, p_second / norm}}) {
        std::string n = p + "experts." + std::to_string(e) + ".";
        auto y = swiglu_mlp(ckpt.tensors.at(n + "w1.weight"), ckpt.tensors.at(n + "w3.weight"),
                            ckpt.tensors.at(n + "w2.weight"), x);
        for (int64_t h = 0; h < kHidden; ++h) out[size_t(h)] += w * y[size_t(h)];
    }
    if (shared) {
        auto y = swiglu_mlp(ckpt.tensors.at(p + "shared_expert.gate_proj.weight"),
                            ckpt.tensors.at(p + "shared_expert.up_proj.weight"),
                            ckpt.tensors.at(p + "shared_expert.down_proj.weight"), x);
        double g = matvec(ckpt.tensors.at(p + "shared_expert_gate.weight"), x)[0];
        for (int64_t h = 0; h < kHidden; ++h) out[size_t(h)] += y[size_t(h)] / (1.0 + std::exp(-g));
    }
    return out;
}

void expect_matches_reference(bool renormalize, bool shared) {
    FakeCheckpoint ckpt = per_expert_checkpoint(shared ? 21 : 20, shared);
    MoeSpec spec = mixtral_like_spec();
    spec.renormalize = renormalize;
    if (shared) spec.shared_intermediate_size = kShared;
    auto block = MoeBlock::bind(spec, 0, kHidden, ops::Activation::kSilu, ckpt.source());
    ASSERT_TRUE(block.is_ok()) << block.status().message();
    EXPECT_EQ(ckpt.used.size(), ckpt.tensors.size()) << "every tensor of the block is read";
    const int64_t tokens = 40;
    Tensor x = random_rows(tokens, 5);
    Tensor out = run(*block, x);
    for (int64_t t = 0; t < tokens; ++t) {
        auto expected = reference(ckpt, x.as<float>() + t * kHidden, renormalize, shared);
        for (int64_t h = 0; h < kHidden; ++h)
            ASSERT_NEAR(out.as<float>()[t * kHidden + h], expected[size_t(h)], 1e-5) << "token " << t << " h " << h;
    }
}

TEST(MoeBlock, RenormalisedTopTwoMatchesAPerTokenScalarReference) { expect_matches_reference(true, false); }

TEST(MoeBlock, SharedExpertScaledBySigmoidGateMatchesAPerTokenScalarReference) {
    expect_matches_reference(false, true);
}

TEST(MoeBlock, TokenOutputIsBitwiseIndependentOfTheRestOfTheBatch) {
    FakeCheckpoint ckpt = per_expert_checkpoint(30, true);
    MoeSpec spec = mixtral_like_spec();
    spec.shared_intermediate_size = kShared;
    auto block = MoeBlock::bind(spec, 0, kHidden, ops::Activation::kSilu, ckpt.source());
    ASSERT_TRUE(block.is_ok()) << block.status().message();
    const int64_t tokens = 33;
    Tensor x = random_rows(tokens, 8);
    Tensor together = run(*block, x);
    Tensor reversed_x = Tensor::empty({tokens, kHidden}, DType::kF32);
    for (int64_t t = 0; t < tokens; ++t)
        std::copy_n(x.as<float>() + t * kHidden, kHidden, reversed_x.as<float>() + (tokens - 1 - t) * kHidden);
    Tensor reversed = run(*block, reversed_x);
    for (int64_t t = 0; t < tokens; ++t) {
        Tensor one = Tensor::empty({1, kHidden}, DType::kF32);
        std::copy_n(x.as<float>() + t * kHidden, kHidden, one.as<float>());
        Tensor alone = run(*block, one);
        for (int64_t h = 0; h < kHidden; ++h) {
            ASSERT_EQ(alone.as<float>()[h], together.as<float>()[t * kHidden + h]) << "token " << t;
            ASSERT_EQ(alone.as<float>()[h], reversed.as<float>()[(tokens - 1 - t) * kHidden + h]) << "token " << t;
        }
    }
}

TEST(MoeBlock, StackedExpertLayoutGivesBitwiseTheSameOutput) {
    FakeCheckpoint per_expert = per_expert_checkpoint(40, false);
    FakeCheckpoint stacked = stacked_copy(per_expert);
    MoeSpec spec = mixtral_like_spec();
    auto a = MoeBlock::bind(spec, 0, kHidden, ops::Activation::kSilu, per_expert.source());
    auto b = MoeBlock::bind(spec, 0, kHidden, ops::Activation::kSilu, stacked.source());
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    EXPECT_EQ(stacked.used.size(), stacked.tensors.size());
    Tensor x = random_rows(17, 9);
    Tensor out_a = run(*a, x), out_b = run(*b, x);
    for (int64_t i = 0; i < out_a.numel(); ++i) ASSERT_EQ(out_a.as<float>()[i], out_b.as<float>()[i]) << i;
}

TEST(MoeBlock, MissingExpertTensorIsNamed) {
    FakeCheckpoint ckpt = per_expert_checkpoint(50, false);
    ckpt.tensors.erase("model.layers.0.block_sparse_moe.experts.3.w2.weight");
    auto block = MoeBlock::bind(mixtral_like_spec(), 0, kHidden, ops::Activation::kSilu, ckpt.source());
    ASSERT_FALSE(block.is_ok());
    EXPECT_NE(block.status().message().find("experts.3.w2.weight"), std::string::npos) << block.status().message();
}

TEST(MoeBlock, MissingRouterListsTheNamesLookedFor) {
    FakeCheckpoint ckpt = per_expert_checkpoint(51, false);
    ckpt.tensors.erase("model.layers.0.block_sparse_moe.gate.weight");
    auto block = MoeBlock::bind(mixtral_like_spec(), 0, kHidden, ops::Activation::kSilu, ckpt.source());
    ASSERT_FALSE(block.is_ok());
    const std::string& message = block.status().message();
    EXPECT_NE(message.find("no MoE router"), std::string::npos) << message;
    EXPECT_NE(message.find("model.layers.0.block_sparse_moe.gate.weight"), std::string::npos) << message;
}

TEST(MoeBlock, WrongStackedShapeIsNamedWithBothShapes) {
    FakeCheckpoint stacked = stacked_copy(per_expert_checkpoint(52, false));
    MoeSpec spec = mixtral_like_spec();
    spec.intermediate_size = kInter / 2;
    auto block = MoeBlock::bind(spec, 0, kHidden, ops::Activation::kSilu, stacked.source());
    ASSERT_FALSE(block.is_ok());
    EXPECT_NE(block.status().message().find("gate_up_proj' has shape [5, 16, 12], expected [5, 8, 12]"),
              std::string::npos)
        << block.status().message();
}

}  // namespace
}  // namespace taco
