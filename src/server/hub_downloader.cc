#include "server/hub_downloader.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/json_util.h"
#include "server/hf_cache.h"
#include "server/http_fetch.h"

namespace taco::server {
namespace {
namespace fs = std::filesystem;

constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";
constexpr const char* kPytorchIndex = "pytorch_model.bin.index.json";

std::string env_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Names the cache uses as file names must not reach outside their folder.
bool safe_name(const std::string& s) {
    if (s.empty() || s == "." || s == "..") return false;
    return std::all_of(s.begin(), s.end(),
                       [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string url_escape(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            out += char(c);
        else
            out += fmt::format("%{:02X}", c);
    }
    return out;
}

// ETag values come quoted and maybe weak (W/"abc"); the cache names blobs by the bare value.
std::string normalize_etag(std::string etag) {
    if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
    etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
    return etag;
}

int64_t parse_size(const std::string& s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) return -1;
    return std::strtoll(s.c_str(), nullptr, 10);
}

// An exclusive flock() held while it lives (none when the lock file cannot be opened: downloads then proceed
// unserialised rather than fail).
class BlobLock {
public:
    explicit BlobLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd_ >= 0) ::flock(fd_, LOCK_EX);
    }
    ~BlobLock() {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }
    BlobLock(const BlobLock&) = delete;
    BlobLock& operator=(const BlobLock&) = delete;

private:
    int fd_;
};

int64_t file_size_or_zero(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : int64_t(size);
}

}  // namespace

HubOptions hub_options_from_env() {
    HubOptions options;
    options.endpoint = env_or("HF_ENDPOINT", options.endpoint);
    while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
    options.cache_dir = hf_hub_cache_dir();
    options.token = env_or("HF_TOKEN", "");
    if (options.token.empty()) {
        const std::string home = env_or("HF_HOME", env_or("HOME", "") + "/.cache/huggingface");
        if (auto text = read_text_file(env_or("HF_TOKEN_PATH", home + "/token")))
            options.token = std::string(text->substr(0, text->find_first_of("\r\n")));
    }
    std::string offline = env_or("HF_HUB_OFFLINE", "");
    std::transform(offline.begin(), offline.end(), offline.begin(), [](unsigned char c) { return std::tolower(c); });
    options.offline = offline == "1" || offline == "true" || offline == "yes" || offline == "on";
    return options;
}

HubDownloader::HubDownloader(HubOptions options) : options_(std::move(options)), progress_(options_.progress) {}

std::vector<std::string> HubDownloader::select_files(const std::vector<std::string>& siblings,
                                                     const std::vector<std::string>& index_shards) {
    const std::set<std::string> names(siblings.begin(), siblings.end());
    std::vector<std::string> out;
    auto take = [&](const std::string& name) {
        if (names.count(name) && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    };
    for (const char* name :
         {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
          "added_tokens.json", "chat_template.jinja", "chat_template.json"})
        take(name);
    if (!names.count("tokenizer.json"))
        for (const char* name : {"tokenizer.model", "vocab.json", "merges.txt"}) take(name);
    std::vector<std::string> weights;
    for (const std::string& name : siblings) {
        if (name.find('/') != std::string::npos || !ends_with(name, ".safetensors")) continue;
        if (!index_shards.empty() && std::find(index_shards.begin(), index_shards.end(), name) == index_shards.end())
            continue;  // e.g. a consolidated.safetensors next to the transformers shards
        weights.push_back(name);
    }
    if (!weights.empty()) {
        take(kSafetensorsIndex);
    } else {
        for (const std::string& name : siblings)
            if (name.find('/') == std::string::npos && name.rfind("pytorch_model", 0) == 0 && ends_with(name, ".bin"))
                weights.push_back(name);
        take(kPytorchIndex);
    }
    std::sort(weights.begin(), weights.end());
    for (const std::string& name : weights) take(name);
    return out;
}

Result<std::string> HubDownloader::resolve(const std::string& model) {
    std::error_code ec;
    if (fs::is_directory(model, ec)) return model;
    if (!is_hub_id(model)) return error("{}: no such model folder (and not a hub id like org/name)", model);
    if (auto snapshot = find_cached_snapshot(options_.cache_dir, model, options_.revision)) return *snapshot;
    if (options_.offline)
        return error(
            "{}{}: not in the Hugging Face cache ({}), and HF_HUB_OFFLINE is set so it was not downloaded; unset "
            "HF_HUB_OFFLINE or pass a local model folder",
            model, options_.revision == "main" ? "" : " at revision " + options_.revision,
            hub_repo_dir(options_.cache_dir, model));
    return download(model);
}

std::vector<std::string> HubDownloader::auth_headers() const {
    if (options_.token.empty()) return {};
    return {"Authorization: Bearer " + options_.token};
}

Status HubDownloader::http_error(int status, const std::string& error_code, const std::string& what) const {
    const std::string where = fmt::format("{} on {}", repo_id_, options_.endpoint);
    if (status == 401 || status == 403) {
        if (error_code == "RepoNotFound")
            return error("{}: no such model (HTTP {}; if it is private, set HF_TOKEN to a token that can read it)",
                         where, status);
        if (options_.token.empty())
            return error(
                "{}: access denied (HTTP {}): the model is gated or private; accept its terms on the model page and "
                "set HF_TOKEN to an access token",
                where, status);
        return error(
            "{}: access denied (HTTP {}): the token in HF_TOKEN cannot read this model (gated: request "
            "access on the model page)",
            where, status);
    }
    if (status == 404) {
        if (error_code == "RevisionNotFound") return error("{}: no revision '{}' (HTTP 404)", where, options_.revision);
        if (error_code == "EntryNotFound") return error("{}: {}: no such file (HTTP 404)", where, what);
        return error("{}: no such model (HTTP 404)", where);
    }
    return error("{}: {}: HTTP {} from the hub", where, what, status);
}

Status HubDownloader::network_error(const Status& status) const {
    return error(
        "{}: cannot download from the Hugging Face hub at {}: {}. Check the network (or HF_ENDPOINT); to run from the "
        "local cache only set HF_HUB_OFFLINE=1, or pass a local model folder",
        repo_id_, options_.endpoint, status.message());
}

Result<HubDownloader::FileInfo> HubDownloader::file_info(const std::string& url, const std::string& name) {
    // Only redirects within the hub are followed (a renamed repository answers with a relative Location): an LFS
    // file's metadata is on the hub's redirect to its CDN, and the CDN's signed URL may refuse a HEAD.
    FetchResponse response;
    std::string target = url;
    for (int hop = 0; hop < 5; ++hop) {
        FetchRequest request;
        request.url = target;
        request.headers = auth_headers();
        request.head = true;
        request.follow_redirects = false;
        request.headers.push_back("Accept-Encoding: identity");  // Content-Length must be the file's size
        if (Status s = HttpFetch::run(request, response); !s) return network_error(s);
        const std::string location = response.header("location");
        const bool relative_redirect = response.status >= 300 && response.status < 400 && location.rfind("/", 0) == 0 &&
                                       response.header("x-linked-etag").empty();
        if (!relative_redirect) break;
        target = options_.endpoint + location;
    }
    if (response.status >= 400) return http_error(response.status, response.header("x-error-code"), name);
    FileInfo info;
    info.etag = normalize_etag(response.header("x-linked-etag"));
    if (info.etag.empty()) info.etag = normalize_etag(response.header("etag"));
    info.size = parse_size(response.header("x-linked-size"));
    if (info.size < 0 && response.status < 300) info.size = parse_size(response.header("content-length"));
    if (!safe_name(info.etag))
        return error("{}: {}: the hub sent no usable ETag ('{}'), so the file has no name in the cache", repo_id_, name,
                     info.etag);
    return info;
}

Status HubDownloader::fetch_blob(const std::string& url, const std::string& name, const FileInfo& info) {
    const fs::path blob = fs::path(repo_dir_) / "blobs" / info.etag;
    std::error_code ec;
    if (fs::is_regular_file(blob, ec) && (info.size < 0 || file_size_or_zero(blob) == info.size)) return Status::ok();
    // Another process (a second `taco_llm serve` of the same model) may be fetching this blob: one at a time, and
    // the later one finds the blob complete.
    // The lock lives where huggingface_hub keeps its own: CACHE/.locks/models--org--name/<etag>.lock.
    const fs::path locks = fs::path(options_.cache_dir) / ".locks" / fs::path(repo_dir_).filename();
    fs::create_directories(locks, ec);
    BlobLock lock((locks / (info.etag + ".lock")).string());
    if (fs::is_regular_file(blob, ec) && (info.size < 0 || file_size_or_zero(blob) == info.size)) return Status::ok();
    const fs::path partial = blob.string() + ".incomplete";
    Status last;
    for (int attempt = 0; attempt <= options_.max_resumes; ++attempt) {
        int64_t offset = file_size_or_zero(partial);
        if (info.size >= 0 && offset > info.size) {  // not this file's bytes: start over
            fs::remove(partial, ec);
            offset = 0;
        }
        if (info.size < 0 || offset < info.size) {
            std::FILE* file = std::fopen(partial.c_str(), "ab");
            if (!file) return error("{}: cannot write {}", repo_id_, partial.string());
            progress_.start(name, offset, info.size);
            FetchRequest request;
            request.url = url;
            request.headers = auth_headers();
            request.range_start = offset > 0 ? offset : -1;
            request.body_file = file;
            request.progress = [&](int64_t now, int64_t) { progress_.update(offset + now); };
            FetchResponse response;
            last = HttpFetch::run(request, response);
            const bool closed = std::fclose(file) == 0;
            if (response.status == 416) {  // the partial file does not fit the remote one
                fs::remove(partial, ec);
                continue;
            }
            if (response.status >= 400) return http_error(response.status, response.header("x-error-code"), name);
            if (!closed) return error("{}: cannot write {}", repo_id_, partial.string());
            if (!last) continue;  // cut short: resume from what arrived
        }
        const int64_t got = file_size_or_zero(partial);
        if (info.size >= 0 && got != info.size) {
            last = error("{} of {} bytes arrived", got, info.size);
            continue;
        }
        progress_.finish(got);
        fs::rename(partial, blob, ec);
        if (ec) return error("{}: cannot move {} into place: {}", repo_id_, partial.string(), ec.message());
        return Status::ok();
    }
    return network_error(error("{}: {} (the partial file {} is kept; running again resumes it)", name, last.message(),
                               partial.string()));
}

Status HubDownloader::link_snapshot(const std::string& commit,
                                    const std::vector<std::pair<std::string, std::string>>& files) {
    const fs::path snapshot = fs::path(repo_dir_) / "snapshots" / commit;
    std::error_code ec;
    fs::create_directories(snapshot, ec);
    if (ec) return error("cannot create {}: {}", snapshot.string(), ec.message());
    for (const auto& [name, etag] : files) {
        const fs::path link = snapshot / name;
        fs::remove(link, ec);
        fs::create_symlink(fs::path("..") / ".." / "blobs" / etag, link, ec);
        if (ec) fs::copy_file(fs::path(repo_dir_) / "blobs" / etag, link, ec);  // a filesystem without symlinks
        if (ec) return error("cannot link {}: {}", link.string(), ec.message());
    }
    if (options_.revision != commit) {
        fs::create_directories(fs::path(repo_dir_) / "refs", ec);
        const fs::path ref = fs::path(repo_dir_) / "refs" / options_.revision;
        std::ofstream(ref.string() + ".tmp") << commit;
        fs::rename(ref.string() + ".tmp", ref, ec);
        if (ec) return error("cannot write {}: {}", ref.string(), ec.message());
    }
    return Status::ok();
}

Result<std::string> HubDownloader::download(const std::string& repo_id) {
    repo_id_ = repo_id;
    repo_dir_ = hub_repo_dir(options_.cache_dir, repo_id);
    if (!is_hub_id(repo_id)) return error("{}: not a hub id like org/name", repo_id);
    if (!safe_name(options_.revision)) return error("revision '{}' is not a branch, tag or commit", options_.revision);
    FetchResponse listing;
    const std::string api_url =
        fmt::format("{}/api/models/{}/revision/{}", options_.endpoint, repo_id, url_escape(options_.revision));
    FetchRequest request;
    request.url = api_url;
    request.headers = auth_headers();
    if (Status s = HttpFetch::run(request, listing); !s) return network_error(s);
    if (listing.status != 200) return http_error(listing.status, listing.header("x-error-code"), "model info");
    std::string commit;
    std::vector<std::string> siblings;
    try {
        auto parsed = parse_json(listing.body);
        if (!parsed) throw std::runtime_error(parsed.status().message());
        const nlohmann::json& info = *parsed;
        commit = info.at("sha").get<std::string>();
        for (const auto& sibling : info.at("siblings")) siblings.push_back(sibling.at("rfilename").get<std::string>());
    } catch (const std::exception& e) {
        return error("{}: the hub's model info from {} is not what was expected: {}", repo_id, api_url, e.what());
    }
    if (!safe_name(commit)) return error("{}: the hub named commit '{}', not a commit hash", repo_id, commit);
    if (std::find(siblings.begin(), siblings.end(), "config.json") == siblings.end())
        return error("{}: the repository has no config.json at {} (not a transformers model)", repo_id,
                     options_.revision);
    fs::create_directories(fs::path(repo_dir_) / "blobs");

    std::vector<std::pair<std::string, std::string>> fetched;  // {file, etag}
    auto fetch = [&](const std::string& name) -> Result<std::string> {
        const std::string url =
            fmt::format("{}/{}/resolve/{}/{}", options_.endpoint, repo_id, commit, url_escape(name));
        TACO_ASSIGN_OR_RETURN(FileInfo info, file_info(url, name));
        TACO_RETURN_IF_ERROR(fetch_blob(url, name, info));
        fetched.emplace_back(name, info.etag);
        return (fs::path(repo_dir_) / "blobs" / info.etag).string();
    };
    std::vector<std::string> shards;
    if (std::find(siblings.begin(), siblings.end(), kSafetensorsIndex) != siblings.end()) {
        TACO_ASSIGN_OR_RETURN(std::string index_path, fetch(kSafetensorsIndex));
        TACO_ASSIGN_OR_RETURN(nlohmann::json index, read_json_file(index_path));
        if (index.is_object() && index.contains("weight_map") && index["weight_map"].is_object())
            for (const auto& [tensor, shard] : index["weight_map"].items())
                if (shard.is_string()) shards.push_back(shard.get<std::string>());
    }
    const std::vector<std::string> wanted = select_files(siblings, shards);
    for (const std::string& name : wanted) {
        const bool done = std::any_of(fetched.begin(), fetched.end(), [&](const auto& f) { return f.first == name; });
        if (!done) TACO_RETURN_IF_ERROR(fetch(name).status());
    }
    TACO_RETURN_IF_ERROR(link_snapshot(commit, fetched));
    return (fs::path(repo_dir_) / "snapshots" / commit).string();
}

}  // namespace taco::server
