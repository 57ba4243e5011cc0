// Helpers for engine tests: golden prompts, engine configs with tiny KV pools.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace taco::testing_util {

inline std::string model_dir(const std::string& name) {
    return std::string(TACO_SOURCE_DIR) + "/tests/data/models/" + name;
}

struct GoldenPrompt {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> greedy_ids;
};

std::vector<GoldenPrompt> golden_prompts(const std::string& model);

std::unique_ptr<Engine> make_engine(const std::string& model, int64_t num_device_blocks = 0,
                                    int64_t num_host_blocks = 0, int64_t max_num_batched_tokens = 8192,
                                    int64_t max_num_seqs = 256, bool prefix_caching = true,
                                    int64_t max_model_len = 256);

// The built-in demo model (a real tokenizer, so text, stop strings and grammars) on the CPU backend.
EngineConfig demo_config(int64_t max_model_len = 512);
// Engine::create, with a test failure naming the error (then null).
std::unique_ptr<Engine> create_engine(const EngineConfig& config);

GenerationInput greedy_input(const std::vector<int32_t>& prompt, int64_t max_tokens, int64_t min_tokens = 0);

}  // namespace taco::testing_util
