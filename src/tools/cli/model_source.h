// MODEL on the command line: a folder, or a Hugging Face hub id found in the local cache or downloaded
// (HF_ENDPOINT, HF_HUB_CACHE / HF_HOME, HF_TOKEN, HF_HUB_OFFLINE, as huggingface_hub reads them).
#pragma once

#include <string>

#include "server/hub_downloader.h"
#include "tools/cli/command.h"

namespace taco::cli {

// The local folder for `model`; exits with the downloader's message when there is none.
inline std::string resolve_model_or_fail(const std::string& model) {
    auto dir = server::HubDownloader(server::hub_options_from_env()).resolve(model);
    if (!dir) fail(dir.status().message());
    return *dir;
}

}  // namespace taco::cli
