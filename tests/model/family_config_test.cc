// Family-specific config handling: Gemma3's 4.x and 5.x config layouts load the same model, LongRoPE's factors are
// chosen per request from its whole length (never from the step), and missing family keys are named.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "exec/forward_executor.h"

#include "batch_runner.h"
#include "golden_models.h"
#include "model/arch_registry.h"
#include "model/decoder.h"

namespace taco {
namespace {

using json = nlohmann::json;
using testing_util::load_error;
using testing_util::read_json;
using testing_util::write_json;

// Scratch copies are named per file so tests of different files never share a folder.
std::string copy_model(const std::string& name, const std::string& tag) {
    return testing_util::copy_model(name, "family_" + tag);
}

std::vector<int32_t> prompt_of(const std::string& model, size_t c) {
    return testing_util::load_golden_model(model).cases.at(c).prompt_ids;
}

// transformers 5.x writes Gemma3's ropes per layer type and the layer pattern as layer_types.
TEST(FamilyConfig, Gemma3ConfigIn5xLayoutGivesTheSameLogits) {
    const std::string v4_dir = testing_util::models_root() + "/gemma3";
    const std::string v5_dir = copy_model("gemma3", "gemma3_v5");
    json config = read_json(v5_dir + "/config.json");
    const int64_t pattern = config["sliding_window_pattern"].get<int64_t>();
    json layer_types = json::array();
    for (int64_t i = 0; i < config["num_hidden_layers"].get<int64_t>(); ++i)
        layer_types.push_back((i + 1) % pattern != 0 ? "sliding_attention" : "full_attention");
    json full = config["rope_scaling"];
    full["rope_theta"] = config["rope_theta"];
    config["rope_parameters"] = {
        {"full_attention", full},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", config["rope_local_base_freq"]}}}};
    config["layer_types"] = layer_types;
    for (const char* key : {"rope_scaling", "rope_theta", "rope_local_base_freq", "sliding_window_pattern"})
        config.erase(key);
    write_json(v5_dir + "/config.json", config);

    auto v4 = Decoder::load(v4_dir);
    auto v5 = Decoder::load(v5_dir);
    ASSERT_TRUE(v4.is_ok()) << v4.status().message();
    ASSERT_TRUE(v5.is_ok()) << v5.status().message();
    ASSERT_TRUE((*v5)->config().rope_local.has_value());
    EXPECT_EQ((*v5)->config().rope_local->theta, (*v4)->config().rope_local->theta);
    EXPECT_EQ((*v5)->config().rope.type, RopeType::kLinear);
    const auto ids = prompt_of("gemma3", 2);  // longer than the sliding window
    EXPECT_EQ(testing_util::run_chunked(**v4, ids, 1 << 20, 16), testing_util::run_chunked(**v5, ids, 1 << 20, 16));
}

std::vector<float> logits_of(Decoder& decoder, const std::vector<int32_t>& ids, int64_t max_length) {
    KvCacheTensors kv = KvCacheTensors::allocate(decoder.config(), 16, 16);
    std::vector<int32_t> table;
    for (int32_t b = 0; b < 16; ++b) table.push_back(b);
    RunnerSequence seq;
    seq.token_ids = ids;
    seq.num_new_tokens = int64_t(ids.size());
    seq.block_table = table;
    seq.num_prompt_logits = seq.num_new_tokens;
    seq.max_length = max_length;
    ExecutorOptions options;
    options.max_num_tokens = int64_t(ids.size());
    options.max_num_sequences = 1;
    options.max_model_len = 16 * 16;
    ForwardExecutor executor(decoder, options);
    const TensorView logits = executor.execute({&seq, 1}, kv);
    return std::vector<float>(logits.as<float>(), logits.as<float>() + logits.numel());
}

// A short prompt that may grow past original_max_position_embeddings uses the long factors from its first token:
// its prompt logits equal those of the same tokens at the start of a long sequence, and differ from a request
// that stays short.
TEST(FamilyConfig, LongRopeFactorsFollowTheRequestsWholeLength) {
    auto decoder = Decoder::load(testing_util::models_root() + "/phi3_longrope");
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
    Decoder& d = **decoder;
    const int64_t original = d.config().rope.original_max_position_embeddings;
    auto long_ids = prompt_of("phi3_longrope", 2);
    ASSERT_GT(int64_t(long_ids.size()), original);
    const std::vector<int32_t> short_ids(long_ids.begin(), long_ids.begin() + 10);
    const int64_t vocab = d.config().vocab_size;

    const auto stays_short = logits_of(d, short_ids, original);
    const auto grows_long = logits_of(d, short_ids, original + 1);
    const auto long_prefix = logits_of(d, long_ids, int64_t(long_ids.size()));
    EXPECT_NE(stays_short, grows_long);
    EXPECT_EQ(grows_long, std::vector<float>(long_prefix.begin(), long_prefix.begin() + 10 * vocab));
}

TEST(FamilyConfig, MissingFamilyKeysAreNamed) {
    struct Case {
        const char* model;
        const char* key;
    };
    for (const Case& c :
         {Case{"gemma2", "query_pre_attn_scalar"}, Case{"gemma3", "hidden_activation"},
          Case{"stablelm", "layer_norm_eps"}, Case{"starcoder2", "norm_epsilon"}, Case{"nemotron", "norm_eps"}}) {
        const std::string dir = copy_model(c.model, std::string("missing_") + c.key);
        json config = read_json(dir + "/config.json");
        config.erase(c.key);
        write_json(dir + "/config.json", config);
        const std::string message = load_error(dir);
        EXPECT_NE(message.find(std::string("'") + c.key + "' is required"), std::string::npos) << message;
    }
}

TEST(FamilyConfig, LongRopeFactorListsMustMatchTheRotaryDimension) {
    const std::string dir = copy_model("phi3_longrope", "longrope_bad");
    json config = read_json(dir + "/config.json");
    config["rope_scaling"]["long_factor"].erase(0);
    write_json(dir + "/config.json", config);
    std::string message = load_error(dir);
    EXPECT_NE(message.find("'long_factor' (7) must each have rotary_dim / 2 = 8 entries"), std::string::npos)
        << message;
    config["rope_scaling"].erase("long_factor");
    write_json(dir + "/config.json", config);
    message = load_error(dir);
    EXPECT_NE(message.find("needs 'long_factor'"), std::string::npos) << message;
}

TEST(FamilyConfig, Gemma3WithoutALocalRopeIsAnError) {
    const std::string dir = copy_model("gemma3", "no_local_rope");
    json config = read_json(dir + "/config.json");
    config.erase("rope_local_base_freq");
    write_json(dir + "/config.json", config);
    const std::string message = load_error(dir);
    EXPECT_NE(message.find("rope_local_base_freq"), std::string::npos) << message;
}

}  // namespace
}  // namespace taco
