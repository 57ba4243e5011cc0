// Remote-code families' load-time weight handling: Baichuan2's NormHead (lm_head rows scaled to unit L2 norm)
// and its trigger, which Baichuan-13B v1 configs lack.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "batch_runner.h"
#include "golden_models.h"
#include "model/decoder.h"
#include "model/norm_head.h"

namespace taco {
namespace {

namespace fs = std::filesystem;

TEST(NormHead, RowsComeOutWithUnitNormAndTheirDirection) {
    Tensor m = Tensor::empty({3, 2}, DType::kF32);
    const float values[] = {3, 4, 0, 0, -1e-3f, 0};
    std::copy_n(values, 6, m.as<float>());
    Tensor out = rows_l2_normalized(m.view());
    ASSERT_EQ(out.view().dtype, DType::kF32);
    EXPECT_FLOAT_EQ(out.as<float>()[0], 0.6f);
    EXPECT_FLOAT_EQ(out.as<float>()[1], 0.8f);
    EXPECT_EQ(out.as<float>()[2], 0.0f);  // a zero row stays zero (divided by the 1e-12 floor)
    EXPECT_EQ(out.as<float>()[3], 0.0f);
    EXPECT_FLOAT_EQ(out.as<float>()[4], -1.0f);
    EXPECT_EQ(out.as<float>()[5], 0.0f);
}

TEST(NormHead, Bf16RowsAreWidenedBeforeNormalising) {
    Tensor m = Tensor::empty({1, 2}, DType::kBF16);
    const uint16_t bits[] = {0x4040, 0x4080};  // 3.0, 4.0
    std::copy_n(bits, 2, m.as<uint16_t>());
    Tensor out = rows_l2_normalized(m.view());
    EXPECT_FLOAT_EQ(out.as<float>()[0], 0.6f);
    EXPECT_FLOAT_EQ(out.as<float>()[1], 0.8f);
}

// The same checkpoint read as Baichuan-13B v1 (no z_loss_weight: the head as stored) must give other logits:
// the golden (Baichuan2's code) depends on the normalisation.
TEST(NormHead, Baichuan2GoldenNeedsIt) {
    const auto golden = testing_util::load_golden_model("baichuan2_13b");
    const fs::path dir = fs::path(::testing::TempDir()) / "taco_baichuan13b_v1";
    fs::remove_all(dir);
    fs::copy(golden.dir, dir, fs::copy_options::recursive);
    std::ifstream in(dir / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    in.close();
    ASSERT_TRUE(config.contains("z_loss_weight"));
    config.erase("z_loss_weight");
    std::ofstream(dir / "config.json") << config.dump(2);
    auto decoder = Decoder::load(dir.string());
    ASSERT_TRUE(decoder.is_ok()) << decoder.status().message();
    EXPECT_FALSE((*decoder)->spec().head.norm_head);
    const auto& c = golden.cases.at(0);
    auto logits = testing_util::run_chunked(**decoder, c.prompt_ids, 1 << 20, 16);
    float max_diff = 0;
    for (size_t i = 0; i < c.last_logits.size(); ++i)
        max_diff = std::max(max_diff, std::abs(logits.back()[i] - c.last_logits[i]));
    EXPECT_GT(max_diff, 1e-2f);
}

}  // namespace
}  // namespace taco
