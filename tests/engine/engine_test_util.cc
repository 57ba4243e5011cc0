#include "engine_test_util.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace taco::testing_util {

std::vector<GoldenPrompt> golden_prompts(const std::string& model) {
    std::ifstream in(model_dir(model) + "/golden.json");
    auto golden = nlohmann::json::parse(in);
    std::vector<GoldenPrompt> out;
    for (const auto& c : golden["cases"])
        out.push_back({c["prompt_ids"].get<std::vector<int32_t>>(), c["greedy_ids"].get<std::vector<int32_t>>()});
    return out;
}

std::unique_ptr<Engine> make_engine(const std::string& model, int64_t num_device_blocks, int64_t num_host_blocks,
                                    int64_t max_num_batched_tokens, int64_t max_num_seqs, bool prefix_caching,
                                    int64_t max_model_len) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = model_dir(model);
    config.max_model_len = max_model_len;
    config.num_device_blocks = num_device_blocks;
    config.num_host_blocks = num_host_blocks;
    config.max_num_batched_tokens = max_num_batched_tokens;
    config.max_num_seqs = max_num_seqs;
    config.enable_prefix_caching = prefix_caching;
    return create_engine(config);
}

EngineConfig demo_config(int64_t max_model_len) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;
    config.model_dir = std::string(TACO_SOURCE_DIR) + "/models/demo";
    config.max_model_len = max_model_len;
    return config;
}

std::unique_ptr<Engine> create_engine(const EngineConfig& config) {
    auto engine = Engine::create(config);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    return engine.is_ok() ? std::move(engine).value() : nullptr;
}

GenerationInput greedy_input(const std::vector<int32_t>& prompt, int64_t max_tokens, int64_t min_tokens) {
    GenerationInput input;
    input.prompt_ids = prompt;
    input.params.temperature = 0;
    input.params.max_tokens = max_tokens;
    input.params.min_tokens = min_tokens;
    return input;
}

}  // namespace taco::testing_util
