// The pytorch_model.bin form of a golden model (tests/data/models/<name>_bin*, written by torch.save from the
// same weights as tests/data/models/<name>) must expose the tensors of the safetensors form with the same dtypes,
// shapes and bytes, plus only tied copies, so the decoder binds and computes the same thing (the golden parity
// test runs the _bin folders end to end too).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "io/safetensors.h"

namespace taco {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(TACO_SOURCE_DIR) / "tests/data/models";

// Folders whose name has a "_bin" part and that hold pytorch_model.bin (or its index), in tests/data/models and
// in tests/data/models/pending (families the decoder does not load yet still test the loader).
std::vector<fs::path> bin_model_dirs() {
    std::vector<fs::path> dirs;
    for (const fs::path& root : {kModels, kModels / "pending"}) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(root, ec)) {
            std::string name = entry.path().filename().string();
            bool has_bin = fs::exists(entry.path() / "pytorch_model.bin") ||
                           fs::exists(entry.path() / "pytorch_model.bin.index.json");
            if (has_bin && name.find("_bin") != std::string::npos) dirs.push_back(entry.path());
        }
    }
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

// "llama_bin_sharded" -> tests/data/models[/pending]/llama, or empty when there is none.
fs::path safetensors_twin(const fs::path& bin_dir) {
    std::string name = bin_dir.filename().string();
    std::string base = name.substr(0, name.find("_bin"));
    for (const fs::path& root : {kModels, kModels / "pending"}) {
        if (fs::exists(root / base / "golden.json")) return root / base;
    }
    return {};
}

TEST(BinGoldenModelsTest, Checkpoint_BinFormOfEachGoldenModelHoldsTheSameTensorsAsItsSafetensors) {
    std::vector<fs::path> dirs = bin_model_dirs();
    if (dirs.empty()) GTEST_SKIP() << "no tests/data/models/*_bin* folders";
    int num_compared = 0;
    for (const fs::path& dir : dirs) {
        SCOPED_TRACE(dir.string());
        fs::path safetensors_dir = safetensors_twin(dir);
        if (safetensors_dir.empty()) continue;  // a .bin-only model: the golden parity test covers it
        auto bin = Checkpoint::open_dir(dir.string());
        ASSERT_TRUE(bin.is_ok()) << bin.status().message();
        auto st = Checkpoint::open_dir(safetensors_dir.string());
        ASSERT_TRUE(st.is_ok()) << st.status().message();
        // A checkpoint of the base model alone (facebook/opt-125m) names "decoder.x" what the full model names
        // "model.decoder.x": transformers strips base_model_prefix, the first component.
        auto bin_name = [&](const std::string& tensor) {
            size_t dot = tensor.find('.');
            if (bin->contains(tensor) || dot == std::string::npos) return tensor;
            return tensor.substr(dot + 1);
        };
        // save_pretrained drops tied copies (lm_head.weight of a tied head) only from safetensors; in a .bin they
        // stay, as views of the tensor they are tied to.
        std::set<std::string> matched;
        std::set<const void*> shared_data;
        for (const std::string& tensor : st->tensor_names()) {
            SCOPED_TRACE(tensor);
            std::string name = bin_name(tensor);
            ASSERT_TRUE(bin->contains(name)) << "missing from the .bin";
            matched.insert(name);
            auto a = bin->tensor(name);
            auto b = st->tensor(tensor);
            ASSERT_TRUE(a.is_ok()) << a.status().message();
            ASSERT_TRUE(b.is_ok()) << b.status().message();
            EXPECT_EQ(a->dtype, b->dtype);
            EXPECT_EQ(a->shape_string(), b->shape_string());
            ASSERT_EQ(a->nbytes(), b->nbytes());
            EXPECT_EQ(std::memcmp(a->data, b->data, a->nbytes()), 0);
            shared_data.insert(a->data);
        }
        for (const std::string& tensor : bin->tensor_names()) {
            if (matched.count(tensor) != 0) continue;
            auto view = bin->tensor(tensor);
            ASSERT_TRUE(view.is_ok()) << view.status().message();
            EXPECT_TRUE(shared_data.count(view->data) != 0)
                << "'" << tensor << "' is only in the .bin and ties to no tensor of the safetensors";
        }
        ++num_compared;
    }
    if (num_compared == 0) GTEST_SKIP() << "no *_bin folder has a safetensors twin";
}

}  // namespace
}  // namespace taco
