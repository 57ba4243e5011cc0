#include "tools/cli/hf_overrides.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/json_util.h"
#include "model/model_config.h"
#include "tools/cli/command.h"

namespace taco::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

void merge_hf_overrides(json& config, const json& overrides) {
    for (const auto& [key, value] : overrides.items()) {
        if (value.is_object() && config.contains(key) && config[key].is_object())
            merge_hf_overrides(config[key], value);
        else
            config[key] = value;
    }
}

Result<HfOverridesFolder> HfOverridesFolder::create(const std::string& model_dir, const std::string& text) {
    HfOverridesFolder folder;
    folder.dir_ = model_dir;
    if (text.empty()) return folder;
    auto overrides = parse_json(text);
    if (!overrides) return error("--hf-overrides is not valid JSON: {}", overrides.status().message());
    if (!overrides->is_object())
        return error(
            "--hf-overrides must be a JSON object of config.json keys, e.g. '{{\"rope_theta\": 500000}}', got {}",
            json_excerpt(*overrides));
    const std::string config_path = join_path(model_dir, "config.json");
    if (!file_exists(config_path)) return error("{}: no config.json (is this a model folder?)", model_dir);
    TACO_ASSIGN_OR_RETURN(json config, read_json_file(config_path));
    if (!config.is_object()) return error("{}: must be a JSON object", config_path);
    merge_hf_overrides(config, *overrides);
    const std::string source = config_path + " with --hf-overrides";
    TACO_RETURN_IF_ERROR(ModelConfig::from_json(config, source).status());  // parsed and validated as the file

    static std::atomic<int> counter{0};
    const fs::path overlay =
        fs::temp_directory_path() / fmt::format("taco_hf_overrides_{}_{}", ::getpid(), counter.fetch_add(1));
    std::error_code ec;
    fs::remove_all(overlay, ec);
    fs::create_directories(overlay, ec);
    if (ec) return error("--hf-overrides: cannot create {}: {}", overlay.string(), ec.message());
    folder.overlay_ = overlay.string();
    folder.dir_ = overlay.string();
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::absolute(model_dir), ec)) {
        if (entry.path().filename() == "config.json") continue;
        fs::create_symlink(entry.path(), overlay / entry.path().filename(), ec);
        if (ec)
            return error("--hf-overrides: cannot link {} into {}: {}", entry.path().string(), overlay.string(),
                         ec.message());
    }
    if (ec) return error("--hf-overrides: cannot list {}: {}", model_dir, ec.message());
    std::ofstream out(overlay / "config.json");
    out << config.dump(2);
    if (!out) return error("--hf-overrides: cannot write {}", (overlay / "config.json").string());
    return folder;
}

HfOverridesFolder::HfOverridesFolder(HfOverridesFolder&& other) noexcept
    : dir_(std::move(other.dir_)), overlay_(std::exchange(other.overlay_, std::string())) {}

HfOverridesFolder::~HfOverridesFolder() {
    if (overlay_.empty()) return;
    std::error_code ec;
    fs::remove_all(overlay_, ec);  // the links only, never what they point to
}

std::unique_ptr<Engine> create_engine_with_hf_overrides(EngineConfig config, const std::string& hf_overrides) {
    Result<std::unique_ptr<Engine>> engine = [&] {
        auto folder = HfOverridesFolder::create(config.model_dir, hf_overrides);
        if (!folder) fail(folder.status().message());
        config.model_dir = folder->dir();  // the tokenizer too, unless --tokenizer named another: the same files
        return Engine::create(config);
    }();  // the overlay is gone: the engine has read the config and opened the weights
    if (!engine) fail(engine.status().message());
    return std::move(*engine);
}

}  // namespace taco::cli
