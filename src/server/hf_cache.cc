#include "server/hf_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

namespace taco::server {
namespace fs = std::filesystem;

std::string hf_hub_cache_dir() {
    auto env = [](const char* name) -> std::string {
        const char* value = std::getenv(name);
        return value && *value ? value : "";
    };
    if (std::string dir = env("HF_HUB_CACHE"); !dir.empty()) return dir;
    if (std::string dir = env("HF_HOME"); !dir.empty()) return dir + "/hub";
    if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/huggingface/hub";
    return env("HOME") + "/.cache/huggingface/hub";
}

Result<std::string> resolve_model_dir(const std::string& model, const std::string& cache_dir) {
    std::error_code ec;
    if (fs::is_directory(model, ec)) return model;
    const size_t slash = model.find('/');
    const bool hub_id = slash != std::string::npos && slash > 0 && slash + 1 < model.size() &&
                        model.find('/', slash + 1) == std::string::npos && model[0] != '.';
    if (!hub_id) return error("{}: no such model folder", model);
    const fs::path repo = fs::path(cache_dir) / ("models--" + model.substr(0, slash) + "--" + model.substr(slash + 1));
    const std::string not_found = fmt::format(
        "{}: not a folder, and not in the Hugging Face cache (looked for {}); downloading is not supported yet", model,
        repo.string());
    if (!fs::is_directory(repo / "snapshots", ec)) return error("{}", not_found);
    std::ifstream ref(repo / "refs" / "main");
    std::string revision;
    if (ref && std::getline(ref, revision) && !revision.empty() && fs::is_directory(repo / "snapshots" / revision, ec))
        return (repo / "snapshots" / revision).string();
    std::vector<fs::path> snapshots;
    for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec))
        if (entry.is_directory()) snapshots.push_back(entry.path());
    if (snapshots.size() == 1) return snapshots[0].string();
    if (snapshots.empty()) return error("{}", not_found);
    return error("{}: {} snapshots in {} and refs/main names none of them", model, snapshots.size(), repo.string());
}

}  // namespace taco::server
