#include "tools/cli/demo_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace taco::cli {
namespace {

namespace fs = std::filesystem;

bool is_model_folder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "config.json", ec) && fs::is_regular_file(dir / "model.safetensors", ec);
}

// /proc/self/exe names the binary even when it was started through a symlink or from another directory.
fs::path executable_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

}  // namespace

Result<std::string> find_demo_model() {
    if (const char* env = std::getenv("TACO_LLM_DEMO_MODEL"); env && *env) {
        if (!is_model_folder(env))
            return error("TACO_LLM_DEMO_MODEL={} is not a model folder (config.json + model.safetensors)", env);
        return std::string(env);
    }
    std::vector<fs::path> candidates;
    const fs::path bin = executable_dir();
    if (!bin.empty()) {
        candidates.push_back(bin / ".." / "share" / "taco-llm" / "models" / "demo");
        // A build folder anywhere inside the source tree (build/, build/<preset>/, out/x/y/): the first
        // models/demo above the binary.
        for (fs::path dir = bin; !dir.empty(); dir = dir.parent_path()) {
            candidates.push_back(dir / "models" / "demo");
            if (dir == dir.root_path() || dir.parent_path() == dir) break;
        }
    }
    // A build folder outside the source tree (cmake -B /elsewhere): the tree it was built from.
    candidates.push_back(fs::path(TACO_DEMO_MODEL_SOURCE_DIR));
    std::string looked;
    for (const fs::path& dir : candidates) {
        if (is_model_folder(dir)) return fs::weakly_canonical(dir).string();
        looked += (looked.empty() ? "" : ", ") + dir.lexically_normal().string();
    }
    return error(
        "no MODEL given and the built-in demo model was not found (looked in {}); pass a model folder or hub id, "
        "or set TACO_LLM_DEMO_MODEL",
        looked.empty() ? "nowhere: /proc/self/exe is unreadable" : looked);
}

}  // namespace taco::cli
