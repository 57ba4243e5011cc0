// Rotary embedding tables computed from the config alone (ARCHITECTURE.md, "Positions never depend on the
// step"): the cos/sin of position p are the same whatever the length of the forward pass, so chunked prefill
// and prefix reuse stay exact. Frequencies follow transformers' rope init functions, in fp32 as torch does.
// Dynamic NTK: the unscaled table up to max_position_embeddings (as transformers), one table scaled for
// max_position_embeddings x factor beyond it (as vLLM). LongRoPE: short and long factors are two tables; which one a
// request uses depends on its whole length (prompt + max_tokens, ForwardBatch::rotary_offsets), never on the step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace taco {

class WeightPlacer;

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

// The cos/sin tables of every position a sequence can reach, computed once (before any forward pass) and never
// changed. LongRoPE keeps its short and its long table in one: rows [0, num_positions) use the short factors, rows
// [num_positions, 2 num_positions) the long ones, and a token reads row position + its ForwardBatch::rotary_offsets
// entry (layout() says which offset a long sequence uses).
class RotaryTables {
public:
    RotaryTables(const ModelConfig& config, int64_t num_positions);
    RotaryTables(RotaryFrequencies frequencies, int rotary_dim, int64_t num_positions);

    int64_t num_positions() const { return num_positions_; }
    int rotary_dim() const { return rotary_dim_; }
    const RotaryFrequencies& frequencies() const { return frequencies_; }
    RotaryLayout layout() const;
    // Moves the tables where `placer` serves weights (a CUDA decoder's prepare()).
    void place(WeightPlacer& placer);
    TensorView cos_table() const { return cos_.view(); }  // [rows, rotary_dim / 2] f32
    TensorView sin_table() const { return sin_.view(); }

private:
    // Rows [first_row, first_row + num_positions_) from inv_freq (and inv_freq_long from long_from on).
    void fill(int64_t first_row, const std::vector<float>& inv_freq, const std::vector<float>& inv_freq_long,
              int64_t long_from, float scaling);

    RotaryFrequencies frequencies_;
    int rotary_dim_ = 0;
    int64_t num_positions_ = 0;
    Tensor cos_;
    Tensor sin_;
};

}  // namespace taco
