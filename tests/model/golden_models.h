// Access to the golden models of tests/data/models (made by tools/make_model_goldens.py with transformers).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace taco::testing_util {

// A greedy path of the fp32 reference: its tokens and each step's top-1/top-2 margin.
struct GreedyPath {
    std::vector<int32_t> greedy_ids;
    std::vector<float> margins;
};

struct GoldenCase {
    std::vector<int32_t> prompt_ids;
    std::vector<float> last_logits;   // fp32 transformers logits at the last prompt position
    std::vector<int32_t> greedy_ids;  // 24 greedy tokens (min_new_tokens = 24)
    std::vector<float> margins;
    // MoE models only, where bf16_alternatives.json is beside golden.json (tools/phimoe_bf16_reference.py): the
    // greedy paths of the fp32 reference with one routing decision that lies within bf16's rounding of its boundary
    // taken the other way, each as legitimate a bf16 result as the golden path (ARCHITECTURE.md "Parity rule").
    std::vector<GreedyPath> bf16_alternatives;
};

struct GoldenModel {
    std::string name;
    std::string dir;
    nlohmann::json golden;
    std::vector<GoldenCase> cases;
};

std::string models_root();
std::vector<std::string> golden_model_names();  // every folder of tests/data/models with a golden.json
GoldenModel load_golden_model(const std::string& name);

// Scratch copies of golden folders for load tests that edit a config or an index: a writable copy of model `name`
// under the test temp dir (`tag` keeps concurrent tests apart), JSON read/write, and Decoder::load's error ("" when
// the folder loads).
std::string copy_model(const std::string& name, const std::string& tag);
nlohmann::json read_json(const std::string& path);
void write_json(const std::string& path, const nlohmann::json& value);
std::string load_error(const std::string& dir);

}  // namespace taco::testing_util
