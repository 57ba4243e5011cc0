// vLLM's --hf-overrides: a JSON object merged into the model's config.json before the model is built (nested
// objects merge key by key; any other value replaces). The engine loads models from a folder, so the merged config
// is given to it as an overlay folder: links to every file of the model's folder but config.json, which is the
// merged one.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "engine/engine.h"

namespace taco::cli {

// `overrides` merged into `config`: objects recursively, anything else replaced.
void merge_hf_overrides(nlohmann::json& config, const nlohmann::json& overrides);

class HfOverridesFolder {
public:
    // `text`: the flag's value. Empty: no overlay, dir() is `model_dir`. Malformed JSON or a non-object is an error
    // naming the flag; the merged config is parsed and validated as config.json is, so a bad value is the same error
    // a bad config.json gives (naming the key), before anything loads.
    static Result<HfOverridesFolder> create(const std::string& model_dir, const std::string& text);
    HfOverridesFolder(HfOverridesFolder&& other) noexcept;
    HfOverridesFolder& operator=(HfOverridesFolder&&) = delete;
    ~HfOverridesFolder();  // removes the overlay

    // The folder to load the model from.
    const std::string& dir() const { return dir_; }

private:
    HfOverridesFolder() = default;
    std::string dir_;
    std::string overlay_;  // the folder to remove; empty when there is none
};

// Engine::create(config) with `hf_overrides` (the flag's text; empty: none) merged into the model's config.json;
// exits with the error, naming the flag or the key, when there is one. The overlay folder is gone when it returns.
std::unique_ptr<Engine> create_engine_with_hf_overrides(EngineConfig config, const std::string& hf_overrides);

}  // namespace taco::cli
