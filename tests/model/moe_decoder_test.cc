// MoE families through the whole decoder on small random checkpoints written here: bitwise batch invariance
// (alone, batched, chunked prefill, decode), both expert layouts, dense layers of Qwen2-MoE, and load errors.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "batch_runner.h"
#include "model/decoder.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing_util::run_chunked;
using testing_util::run_together;
using testing_util::SequenceSpec;

constexpr int64_t kHidden = 32, kInter = 24, kVocab = 64, kExperts = 4, kLayers = 2, kKv = 16;

struct Weights {
    std::map<std::string, std::vector<int64_t>> shapes;
    std::map<std::string, std::vector<float>> values;
    std::mt19937 rng{1234};

    void add(const std::string& name, std::vector<int64_t> shape, float mean = 0.0f, float stddev = 0.2f) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        std::normal_distribution<float> normal(mean, stddev);
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = normal(rng);
        shapes[name] = std::move(shape);
        values[name] = std::move(v);
    }
};

void write_safetensors(const std::string& path, const Weights& w) {
    json header = json::object();
    size_t offset = 0;
    for (const auto& [name, values] : w.values) {
        size_t bytes = values.size() * sizeof(float);
        header[name] = {{"dtype", "F32"}, {"shape", w.shapes.at(name)}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    uint64_t length = text.size();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), sizeof(length));
    out.write(text.data(), std::streamsize(text.size()));
    for (const auto& [name, values] : w.values)
        out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
}

// Attention, norms, embeddings and head shared by the Llama-shaped MoE families (4 heads of 8, 2 kv heads).
void add_common(Weights& w, bool qkv_bias) {
    w.add("model.embed_tokens.weight", {kVocab, kHidden});
    w.add("lm_head.weight", {kVocab, kHidden});
    w.add("model.norm.weight", {kHidden}, 1.0f, 0.1f);
    for (int l = 0; l < kLayers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        w.add(p + "input_layernorm.weight", {kHidden}, 1.0f, 0.1f);
        w.add(p + "post_attention_layernorm.weight", {kHidden}, 1.0f, 0.1f);
        w.add(p + "self_attn.q_proj.weight", {kHidden, kHidden});
        w.add(p + "self_attn.k_proj.weight", {kKv, kHidden});
        w.add(p + "self_attn.v_proj.weight", {kKv, kHidden});
        w.add(p + "self_attn.o_proj.weight", {kHidden, kHidden});
        if (qkv_bias)
            for (auto [proj, size] : {std::pair{"q", kHidden}, std::pair{"k", kKv}, std::pair{"v", kKv}})
                w.add(p + "self_attn." + proj + "_proj.bias", {size});
    }
}

json common_config(const std::string& architecture) {
    return {{"architectures", {architecture}},
            {"hidden_size", kHidden},
            {"num_hidden_layers", kLayers},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"vocab_size", kVocab},
            {"rms_norm_eps", 1e-5},
            {"max_position_embeddings", 128},
            {"rope_theta", 10000.0},
            {"num_experts_per_tok", 2}};
}

std::string write_model(const std::string& tag, const json& config, const Weights& w) {
    fs::path dir = fs::path(::testing::TempDir()) / ("taco_moe_decoder_" + tag);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << config.dump(2);
    write_safetensors((dir / "model.safetensors").string(), w);
    return dir.string();
}

// Mixtral: per-expert block_sparse_moe tensors, or transformers 5's stacked mlp.experts tensors (same values).
std::string mixtral_model(const std::string& tag, bool stacked, int extra_experts = 0) {
    Weights w;
    add_common(w, false);
    for (int l = 0; l < kLayers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".block_sparse_moe.";
        w.add(p + "gate.weight", {kExperts, kHidden}, 0.0f, 0.5f);
        for (int e = 0; e < kExperts + extra_experts; ++e) {
            std::string x = p + "experts." + std::to_string(e) + ".";
            w.add(x + "w1.weight", {kInter, kHidden});
            w.add(x + "w3.weight", {kInter, kHidden});
            w.add(x + "w2.weight", {kHidden, kInter});
        }
        if (!stacked) continue;
        std::string q = "model.layers." + std::to_string(l) + ".mlp.";
        std::vector<float> gate_up, down;
        for (int e = 0; e < kExperts; ++e) {
            std::string x = p + "experts." + std::to_string(e) + ".";
            for (const char* part : {"w1", "w3"}) {
                const auto& v = w.values.at(x + part + ".weight");
                gate_up.insert(gate_up.end(), v.begin(), v.end());
            }
            const auto& v = w.values.at(x + "w2.weight");
            down.insert(down.end(), v.begin(), v.end());
            for (const char* part : {"w1", "w2", "w3"}) {
                w.values.erase(x + part + ".weight");
                w.shapes.erase(x + part + ".weight");
            }
        }
        w.values[q + "gate.weight"] = w.values.at(p + "gate.weight");
        w.shapes[q + "gate.weight"] = w.shapes.at(p + "gate.weight");
        w.values.erase(p + "gate.weight");
        w.shapes.erase(p + "gate.weight");
        w.values[q + "experts.gate_up_proj"] = gate_up;
        w.shapes[q + "experts.gate_up_proj"] = {kExperts, 2 * kInter, kHidden};
        w.values[q + "experts.down_proj"] = down;
        w.shapes[q + "experts.down_proj"] = {kExperts, kHidden, kInter};
    }
    json config = common_config("MixtralForCausalLM");
    config["intermediate_size"] = kInter;
    config["num_local_experts"] = kExperts;
    return write_model(tag, config, w);
}

// Qwen2-MoE with layer 0 dense (mlp_only_layers) and layer 1 sparse with a shared expert.
std::string qwen2_moe_model(const std::string& tag) {
    Weights w;
    add_common(w, true);
    const int64_t dense = 40, shared = 20;
    w.add("model.layers.0.mlp.gate_proj.weight", {dense, kHidden});
    w.add("model.layers.0.mlp.up_proj.weight", {dense, kHidden});
    w.add("model.layers.0.mlp.down_proj.weight", {kHidden, dense});
    std::string p = "model.layers.1.mlp.";
    w.add(p + "gate.weight", {kExperts, kHidden}, 0.0f, 0.5f);
    for (int e = 0; e < kExperts; ++e) {
        std::string x = p + "experts." + std::to_string(e) + ".";
        w.add(x + "gate_proj.weight", {kInter, kHidden});
        w.add(x + "up_proj.weight", {kInter, kHidden});
        w.add(x + "down_proj.weight", {kHidden, kInter});
    }
    w.add(p + "shared_expert.gate_proj.weight", {shared, kHidden});
    w.add(p + "shared_expert.up_proj.weight", {shared, kHidden});
    w.add(p + "shared_expert.down_proj.weight", {kHidden, shared});
    w.add(p + "shared_expert_gate.weight", {1, kHidden});
    json config = common_config("Qwen2MoeForCausalLM");
    config["intermediate_size"] = dense;
    config["moe_intermediate_size"] = kInter;
    config["shared_expert_intermediate_size"] = shared;
    config["num_experts"] = kExperts;
    config["mlp_only_layers"] = {0};
    return write_model(tag, config, w);
}

std::unique_ptr<Decoder> load(const std::string& dir) {
    auto decoder = Decoder::load(dir);
    EXPECT_TRUE(decoder.is_ok()) << decoder.status().message();
    return decoder.is_ok() ? std::move(decoder).value() : nullptr;
}

std::vector<int32_t> random_ids(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = int32_t(rng() % kVocab);
    return ids;
}

void expect_batch_invariant(Decoder& d) {
    const auto a = random_ids(37, 1), b = random_ids(21, 2), c = random_ids(50, 3);
    const auto alone = run_together(d, {SequenceSpec{a}}, 16, 1)[0];
    const auto batched = run_together(d, {SequenceSpec{b}, SequenceSpec{a}, SequenceSpec{c}}, 16, 7);
    const auto chunked = run_chunked(d, a, 5, 16);
    const auto decoded = run_chunked(d, a, 1, 8);
    ASSERT_EQ(alone.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(alone[i], batched[1][i]) << "batched with others, token " << i;
        ASSERT_EQ(alone[i], chunked[i]) << "chunked prefill, token " << i;
        ASSERT_EQ(alone[i], decoded[i]) << "decode, token " << i;
    }
    EXPECT_EQ(batched[0], run_together(d, {SequenceSpec{b}}, 16, 9)[0]);
}

TEST(MoeDecoder, MixtralLogitsAreBitwiseEqualAloneBatchedChunkedAndDecoded) {
    auto d = load(mixtral_model("mixtral", false));
    ASSERT_TRUE(d);
    expect_batch_invariant(*d);
}

TEST(MoeDecoder, MixtralStackedExpertCheckpointGivesTheSameLogits) {
    auto per_expert = load(mixtral_model("mixtral_per_expert", false));
    auto stacked = load(mixtral_model("mixtral_stacked", true));
    ASSERT_TRUE(per_expert && stacked);
    const auto ids = random_ids(30, 4);
    EXPECT_EQ(run_together(*per_expert, {SequenceSpec{ids}}, 16, 1),
              run_together(*stacked, {SequenceSpec{ids}}, 16, 1));
}

TEST(MoeDecoder, Qwen2MoeWithDenseAndSparseLayersIsBatchInvariant) {
    auto d = load(qwen2_moe_model("qwen2_moe"));
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->spec().moe.is_sparse(0));
    EXPECT_TRUE(d->spec().moe.is_sparse(1));
    expect_batch_invariant(*d);
}

TEST(MoeDecoder, ExpertTensorsBeyondNumExpertsAreUnused) {
    auto decoder = Decoder::load(mixtral_model("mixtral_extra", false, 1));
    ASSERT_FALSE(decoder.is_ok());
    const std::string& message = decoder.status().message();
    EXPECT_NE(message.find("not used by MixtralForCausalLM"), std::string::npos) << message;
    EXPECT_NE(message.find("experts.4."), std::string::npos) << message;
}

TEST(MoeDecoder, MissingExpertCountIsANamedConfigError) {
    std::string dir = mixtral_model("mixtral_no_count", false);
    json config = json::parse(std::ifstream(dir + "/config.json"));
    config.erase("num_local_experts");
    std::ofstream(dir + "/config.json") << config.dump();
    auto decoder = Decoder::load(dir);
    ASSERT_FALSE(decoder.is_ok());
    EXPECT_NE(decoder.status().message().find("'num_local_experts'"), std::string::npos) << decoder.status().message();
}

}  // namespace
}  // namespace taco
