// MODEL on the command line: a folder, or a Hugging Face hub id found in the local cache or downloaded
// (HF_ENDPOINT, HF_HUB_CACHE / HF_HOME, HF_TOKEN, HF_HUB_OFFLINE, as huggingface_hub reads them).
#pragma once

#include <string>

#include "server/hub_downloader.h"
#include "tools/cli/command.h"

namespace taco::cli {

// The local folder for `model`; exits with the downloader's message when there is none. `revision` (a branch, tag
// or commit) and `download_dir` (a hub cache folder), as vLLM's --revision and --download-dir, override the defaults
// when not empty.
inline std::string resolve_model_or_fail(const std::string& model, const std::string& revision = "",
                                         const std::string& download_dir = "") {
    server::HubOptions options = server::hub_options_from_env();
    if (!revision.empty()) options.revision = revision;
    if (!download_dir.empty()) options.cache_dir = download_dir;
    auto dir = server::HubDownloader(options).resolve(model);
    if (!dir) fail(dir.status().message());
    return *dir;
}

}  // namespace taco::cli
