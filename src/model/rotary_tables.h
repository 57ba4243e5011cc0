// Rotary embedding tables computed from the config alone (ARCHITECTURE.md, "Positions never depend on the
// step"): the cos/sin of position p are the same whatever the length of the forward pass, so chunked prefill
// and prefix reuse stay exact. Frequencies follow transformers' rope init functions, in fp32 as torch does.
// Dynamic NTK: the unscaled table up to max_position_embeddings (as transformers), one table scaled for
// max_position_embeddings x factor beyond it (as vLLM). LongRoPE: short and long factors are two tables; which one a
// request uses depends on its whole length (ForwardBatch::max_lengths), never on the step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"

namespace taco {

struct RotaryFrequencies {
    std::vector<float> inv_freq;       // [rotary_dim / 2]
    std::vector<float> inv_freq_long;  // dynamic only: used from position `long_from` on
    int64_t long_from = INT64_MAX;
    float attention_scaling = 1.0f;       // multiplies cos and sin (yarn, longrope)
    float attention_scaling_long = 1.0f;  // longrope: of the long table (PhiMoE's long_mscale; else the same)
    // longrope: a request that may grow past this many tokens uses inv_freq_long at every position (0: none).
    int64_t long_rope_threshold = 0;
};

RotaryFrequencies compute_rotary_frequencies(const ModelConfig& config);

class RotaryTables {
public:
    explicit RotaryTables(const ModelConfig& config);
    RotaryTables(RotaryFrequencies frequencies, int rotary_dim);
    // longrope: the tables of the long factors (nullptr for other kinds).
    std::unique_ptr<RotaryTables> long_rope_tables() const;

    // Grows the tables so positions [0, num_positions) are present. Existing rows never change.
    void ensure(int64_t num_positions);
    int64_t num_positions() const { return num_positions_; }
    int rotary_dim() const { return rotary_dim_; }
    const RotaryFrequencies& frequencies() const { return frequencies_; }
    TensorView cos_table() const;  // [num_positions, rotary_dim / 2] f32
    TensorView sin_table() const;

private:
    RotaryFrequencies frequencies_;
    int rotary_dim_ = 0;
    int64_t num_positions_ = 0;
    std::vector<float> cos_;
    std::vector<float> sin_;
};

}  // namespace taco
