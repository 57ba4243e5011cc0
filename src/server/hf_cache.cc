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

bool is_hub_id(const std::string& model) {
    const size_t slash = model.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 >= model.size()) return false;
    if (model.find('/', slash + 1) != std::string::npos || model.find('\\') != std::string::npos) return false;
    const std::string org = model.substr(0, slash), name = model.substr(slash + 1);
    return org[0] != '.' && name != "." && name != "..";
}

std::string hub_repo_dir(const std::string& cache_dir, const std::string& repo_id) {
    const size_t slash = repo_id.find('/');
    return (fs::path(cache_dir) / ("models--" + repo_id.substr(0, slash) + "--" + repo_id.substr(slash + 1))).string();
}

std::optional<std::string> find_cached_snapshot(const std::string& cache_dir, const std::string& repo_id,
                                                const std::string& revision) {
    std::error_code ec;
    const fs::path repo = hub_repo_dir(cache_dir, repo_id);
    auto complete = [&](const fs::path& dir) { return fs::is_regular_file(dir / "config.json", ec); };
    if (revision.find('/') == std::string::npos && revision.find("..") == std::string::npos) {
        std::ifstream ref(repo / "refs" / revision);
        std::string commit;
        if (ref && std::getline(ref, commit) && !commit.empty() && commit.find('/') == std::string::npos &&
            complete(repo / "snapshots" / commit))
            return (repo / "snapshots" / commit).string();
        if (complete(repo / "snapshots" / revision)) return (repo / "snapshots" / revision).string();  // a commit
    }
    if (revision != "main" || fs::exists(repo / "refs" / "main", ec)) return std::nullopt;
    std::vector<fs::path> snapshots;
    for (const auto& entry : fs::directory_iterator(repo / "snapshots", ec))
        if (entry.is_directory()) snapshots.push_back(entry.path());
    if (snapshots.size() == 1 && complete(snapshots[0])) return snapshots[0].string();
    return std::nullopt;
}

Result<std::string> resolve_model_dir(const std::string& model, const std::string& cache_dir) {
    std::error_code ec;
    if (fs::is_directory(model, ec)) return model;
    if (!is_hub_id(model)) return error("{}: no such model folder (and not a hub id like org/name)", model);
    if (auto snapshot = find_cached_snapshot(cache_dir, model)) return *snapshot;
    return error("{}: not a folder, and not in the Hugging Face cache (looked for {}/snapshots/<commit>/config.json)",
                 model, hub_repo_dir(cache_dir, model));
}

}  // namespace taco::server
