// HubDownloader: turns MODEL (a folder, or a Hugging Face hub id "org/name") into a local folder, downloading
// what the engine needs from the hub when the id is not in the local cache, into huggingface_hub's cache layout
// so either tool reuses the other's downloads:
//   CACHE/models--org--name/blobs/<etag>                     file contents (git sha1, or sha256 for LFS files)
//   CACHE/models--org--name/snapshots/<commit>/<file>         -> ../../blobs/<etag>
//   CACHE/models--org--name/refs/main                        <commit>
// Protocol: GET {endpoint}/api/models/{repo}/revision/{revision} lists the commit ("sha") and files
// ("siblings"); each file's metadata comes from HEAD and its bytes from GET {endpoint}/{repo}/resolve/{commit}/{file}
// (redirects followed; X-Repo-Commit, X-Linked-Etag or ETag, X-Linked-Size or Content-Length). Bytes go to
// blobs/<etag>.incomplete first, a broken transfer resumes with a Range request, and the blob is renamed into place
// when complete. The snapshot's links and refs/ are written only once every blob is there, so a failed download
// never leaves a snapshot that looks complete.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "server/download_progress.h"

namespace taco::server {

struct HubOptions {
    std::string endpoint = "https://huggingface.co";
    std::string cache_dir;  // the hub cache folder (hf_hub_cache_dir())
    std::string token;      // sent as "Authorization: Bearer TOKEN" when set
    bool offline = false;   // never touch the network; the cache or a folder only
    std::string revision = "main";
    ProgressStyle progress = ProgressStyle::kAuto;
    int max_resumes = 3;  // Range requests per file after transfers cut short
};

// The options as huggingface_hub reads its environment: HF_ENDPOINT, HF_HUB_CACHE / HF_HOME (hf_hub_cache_dir()),
// HF_TOKEN (else the token file $HF_HOME/token), HF_HUB_OFFLINE ("1", "true", "yes", "on": offline).
HubOptions hub_options_from_env();

class HubDownloader {
public:
    explicit HubDownloader(HubOptions options);

    // A folder as is; a hub id from the cache, else (unless offline) downloaded. Returns the local folder.
    Result<std::string> resolve(const std::string& model);
    // Downloads the files the engine needs (see select_files) of hub id `repo_id` at options.revision; returns
    // the snapshot folder. Blobs already in the cache are not fetched again.
    Result<std::string> download(const std::string& repo_id);

    // Of a repository's file names, those the engine reads: config, generation config, tokenizer files, chat
    // template, and the weights (the *.safetensors, only the shards `index_shards` names when the repo has an index;
    // pytorch_model*.bin only when there is no safetensors file). Files in subfolders are never needed.
    static std::vector<std::string> select_files(const std::vector<std::string>& siblings,
                                                 const std::vector<std::string>& index_shards = {});

private:
    struct FileInfo {
        std::string etag;
        int64_t size = -1;
    };
    std::vector<std::string> auth_headers() const;
    Status http_error(int status, const std::string& error_code, const std::string& what) const;
    Status network_error(const Status& status) const;
    Result<FileInfo> file_info(const std::string& url, const std::string& name);
    Status fetch_blob(const std::string& url, const std::string& name, const FileInfo& info);
    Result<std::vector<std::string>> index_shards(const std::string& url);
    Status link_snapshot(const std::string& commit, const std::vector<std::pair<std::string, std::string>>& files);

    HubOptions options_;
    std::string repo_id_;
    std::string repo_dir_;
    DownloadProgress progress_;
};

}  // namespace taco::server
