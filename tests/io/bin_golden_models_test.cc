// The pytorch_model.bin form of a golden model (tests/data/models/<name>_bin, written by torch.save from the
// same weights as tests/data/models/<name>) must expose exactly the tensors of the safetensors form: same
// names, dtypes, shapes and bytes, so the decoder binds and computes the same thing (the golden parity test
// runs the _bin folders end to end too).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io/safetensors.h"

namespace taco {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(TACO_SOURCE_DIR) / "tests/data/models";

std::vector<std::string> bin_model_names() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(kModels, ec)) {
        std::string name = entry.path().filename().string();
        bool has_bin =
            fs::exists(entry.path() / "pytorch_model.bin") || fs::exists(entry.path() / "pytorch_model.bin.index.json");
        if (has_bin && name.size() > 4 && name.ends_with("_bin")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST(BinGoldenModelsTest, Checkpoint_BinFormOfEachGoldenModelHoldsTheSameTensorsAsItsSafetensors) {
    std::vector<std::string> names = bin_model_names();
    if (names.empty()) GTEST_SKIP() << "no tests/data/models/*_bin folders";
    int num_compared = 0;
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        fs::path safetensors_dir = kModels / name.substr(0, name.size() - 4);
        if (!fs::exists(safetensors_dir)) continue;  // a .bin-only model: the golden parity test covers it
        auto bin = Checkpoint::open_dir((kModels / name).string());
        ASSERT_TRUE(bin.is_ok()) << bin.status().message();
        auto st = Checkpoint::open_dir(safetensors_dir.string());
        ASSERT_TRUE(st.is_ok()) << st.status().message();
        ASSERT_EQ(bin->tensor_names(), st->tensor_names());
        for (const std::string& tensor : st->tensor_names()) {
            SCOPED_TRACE(tensor);
            auto a = bin->tensor(tensor);
            auto b = st->tensor(tensor);
            ASSERT_TRUE(a.is_ok()) << a.status().message();
            ASSERT_TRUE(b.is_ok()) << b.status().message();
            EXPECT_EQ(a->dtype, b->dtype);
            EXPECT_EQ(a->shape_string(), b->shape_string());
            ASSERT_EQ(a->nbytes(), b->nbytes());
            EXPECT_EQ(std::memcmp(a->data, b->data, a->nbytes()), 0);
        }
        ++num_compared;
    }
    if (num_compared == 0) GTEST_SKIP() << "no *_bin folder has a safetensors twin";
}

}  // namespace
}  // namespace taco
