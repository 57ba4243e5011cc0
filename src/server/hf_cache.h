// Finds a model given as a Hugging Face hub id ("org/name") in the local hub cache, with the layout
// huggingface_hub writes: CACHE/models--org--name/{refs/main, snapshots/<revision>/..., blobs/<etag>}.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"

namespace taco::server {

// The hub cache folder as huggingface_hub picks it: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

// "org/name": one slash with text on both sides, no "." or ".." part, no backslash.
bool is_hub_id(const std::string& model);

// CACHE/models--org--name for hub id `repo_id`.
std::string hub_repo_dir(const std::string& cache_dir, const std::string& repo_id);

// The snapshot folder of `repo_id` at `revision` (a branch or tag named in refs/, or a commit) that holds a
// config.json; with revision "main" and no refs/main, the only snapshot. nullopt when there is none.
std::optional<std::string> find_cached_snapshot(const std::string& cache_dir, const std::string& repo_id,
                                                const std::string& revision = "main");

// `model` itself when it is a folder; else the cached snapshot of hub id `model` (see find_cached_snapshot).
// Errors say where it looked. Never touches the network (HubDownloader::resolve does).
Result<std::string> resolve_model_dir(const std::string& model, const std::string& cache_dir);

}  // namespace taco::server
