// XverseForCausalLM has no published modeling code (so no golden); it is served as Llama: the llama golden
// checkpoint relabelled as Xverse must give llama's logits exactly.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "batch_runner.h"
#include "golden_models.h"
#include "model/decoder.h"

namespace taco {
namespace {

namespace fs = std::filesystem;

TEST(Xverse, LlamaCheckpointRelabelledAsXverseGivesLlamaLogits) {
    const auto golden = testing_util::load_golden_model("llama");
    const fs::path dir = fs::path(::testing::TempDir()) / "taco_xverse_from_llama";
    fs::remove_all(dir);
    fs::copy(golden.dir, dir, fs::copy_options::recursive);
    std::ifstream in(dir / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    in.close();
    config["architectures"] = {"XverseForCausalLM"};
    config["model_type"] = "xverse";
    std::ofstream(dir / "config.json") << config.dump(2);
    auto xverse = Decoder::load(dir.string());
    ASSERT_TRUE(xverse.is_ok()) << xverse.status().message();
    EXPECT_EQ((*xverse)->spec().name, "XverseForCausalLM");
    auto llama = Decoder::load(golden.dir);
    ASSERT_TRUE(llama.is_ok()) << llama.status().message();
    const auto& prompt = golden.cases.at(0).prompt_ids;
    EXPECT_EQ(testing_util::run_chunked(**xverse, prompt, 1 << 20, 16),
              testing_util::run_chunked(**llama, prompt, 1 << 20, 16));
}

}  // namespace
}  // namespace taco
