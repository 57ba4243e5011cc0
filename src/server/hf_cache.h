// Finds a model given as a Hugging Face hub id ("org/name") in the local hub cache, with the layout
// huggingface_hub writes: CACHE/models--org--name/{refs/main, snapshots/<revision>/...}.
#pragma once

#include <string>

#include "core/status.h"

namespace taco::server {

// The hub cache folder as huggingface_hub picks it: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

// `model` itself when it is a folder; else the snapshot folder of hub id `model` in `cache_dir` (the revision
// refs/main names, or the only snapshot). Errors say where it looked.
Result<std::string> resolve_model_dir(const std::string& model, const std::string& cache_dir);

}  // namespace taco::server
