#include "golden_models.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "model/decoder.h"

namespace taco::testing_util {

std::string models_root() { return std::string(TACO_SOURCE_DIR) + "/tests/data/models"; }

std::vector<std::string> golden_model_names() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(models_root()))
        if (std::filesystem::exists(entry.path() / "golden.json")) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

GoldenModel load_golden_model(const std::string& name) {
    GoldenModel model;
    model.name = name;
    model.dir = models_root() + "/" + name;
    std::ifstream in(model.dir + "/golden.json");
    model.golden = nlohmann::json::parse(in);
    for (const auto& c : model.golden["cases"]) {
        GoldenCase gc;
        gc.prompt_ids = c["prompt_ids"].get<std::vector<int32_t>>();
        gc.last_logits = c["last_logits"].get<std::vector<float>>();
        gc.greedy_ids = c["greedy_ids"].get<std::vector<int32_t>>();
        gc.margins = c["margins"].get<std::vector<float>>();
        model.cases.push_back(std::move(gc));
    }
    const std::string alternatives = model.dir + "/bf16_alternatives.json";
    if (std::filesystem::exists(alternatives)) {
        std::ifstream alt_in(alternatives);
        const nlohmann::json alt = nlohmann::json::parse(alt_in);
        for (const auto& c : alt.at("cases")) {
            const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
            const auto match = std::find_if(model.cases.begin(), model.cases.end(),
                                            [&](const GoldenCase& gc) { return gc.prompt_ids == prompt; });
            EXPECT_NE(match, model.cases.end()) << alternatives << ": a case whose prompt is not golden.json's";
            if (match == model.cases.end()) continue;
            for (const auto& path : c["paths"])
                match->bf16_alternatives.push_back(
                    {path["greedy_ids"].get<std::vector<int32_t>>(), path["margins"].get<std::vector<float>>()});
        }
    }
    return model;
}

std::string copy_model(const std::string& name, const std::string& tag) {
    namespace fs = std::filesystem;
    fs::path dst = fs::path(::testing::TempDir()) / ("taco_model_copy_" + tag);
    fs::remove_all(dst);
    fs::copy(models_root() + "/" + name, dst, fs::copy_options::recursive);
    return dst.string();
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

void write_json(const std::string& path, const nlohmann::json& value) { std::ofstream(path) << value.dump(2); }

std::string load_error(const std::string& dir) {
    auto decoder = Decoder::load(dir);
    return decoder.is_ok() ? "" : decoder.status().message();
}

}  // namespace taco::testing_util
