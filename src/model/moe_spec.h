// MoeSpec: the mixture-of-experts part of an ArchSpec, as data (ARCHITECTURE.md, "Architectures are data"). A
// sparse layer replaces the dense MLP by a router ([num_experts, hidden] linear), top-k routing with the family's
// normalisation, num_experts SiLU-gated experts and, optionally, a shared expert scaled by sigmoid(shared gate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/ops.h"
#include "model/model_config.h"

namespace taco {

using ops::MoeRouting;  // kernels/ops.h: kSoftmaxTopK (Mixtral, Qwen MoE), kSparseMixer (PhiMoE)

// Checkpoint names relative to a block prefix. "{}" stands for the layer index, "{e}" for the expert index.
// Checkpoints come in two layouts: one [out, in] tensor per expert and projection (every published checkpoint),
// or the stacked tensors transformers 5 keeps in memory: gate_up_proj [E, 2 * I, H] (gate rows first) and
// down_proj [E, H, I].
struct MoeNames {
    // Candidate block prefixes and router names: the first (prefix, router) whose "<prefix>.<router>.weight"
    // exists is used, so one family reads both its published names and transformers 5's renames.
    std::vector<std::string> block_prefixes = {"model.layers.{}.block_sparse_moe", "model.layers.{}.mlp"};
    std::vector<std::string> routers = {"gate"};
    std::string expert_gate = "experts.{e}.w1";
    std::string expert_up = "experts.{e}.w3";
    std::string expert_down = "experts.{e}.w2";
    std::string stacked_gate_up = "experts.gate_up_proj";
    std::string stacked_down = "experts.down_proj";
    std::string shared_gate = "shared_expert.gate_proj";
    std::string shared_up = "shared_expert.up_proj";
    std::string shared_down = "shared_expert.down_proj";
    std::string shared_expert_gate = "shared_expert_gate";
};

struct MoeSpec {
    int64_t num_experts = 0;  // 0: a dense model
    int64_t top_k = 0;
    int64_t intermediate_size = 0;  // per expert
    MoeRouting routing = MoeRouting::kSoftmaxTopK;
    bool renormalize = true;               // kSoftmaxTopK: divide the k kept probabilities by their sum
    float sparsemixer_eps = 0.0f;          // kSparseMixer: router_jitter_noise (mask when (max - s) / |s| > 2 eps)
    int64_t shared_intermediate_size = 0;  // 0: no shared expert
    std::vector<bool> sparse_layers;       // [num_hidden_layers]; false: the layer keeps the dense MLP
    MoeNames names;

    bool enabled() const { return num_experts > 0; }
    bool is_sparse(int64_t layer) const {
        return enabled() && layer >= 0 && layer < int64_t(sparse_layers.size()) && sparse_layers[size_t(layer)];
    }
};

// The sizes every MoE family shares, checked: num_experts (read from `experts_key`), num_experts_per_tok in
// [1, num_experts], and a positive per-expert `intermediate_size` (named `intermediate_key` in errors). Every layer
// is sparse; routing is softmax top-k renormalised.
Result<MoeSpec> basic_moe_spec(const ModelConfig& config, const char* experts_key, int64_t intermediate_size,
                               const char* intermediate_key);

}  // namespace taco
