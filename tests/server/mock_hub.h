// MockHub: a Hugging Face hub on loopback for the downloader tests, with the real routes and headers:
//   GET  /api/models/{org}/{name}/revision/{rev}   {"sha", "siblings": [{"rfilename"}]}
//   HEAD|GET /{org}/{name}/resolve/{commit}/{file}  200 + ETag (git files) or 302 to /cdn/ + X-Linked-Etag and
//                                                    X-Linked-Size (LFS files: *.safetensors, *.bin); X-Repo-Commit
//   GET /cdn/{etag}                                  the bytes, honouring "Range: bytes=N-" with 206; HEAD gets 403,
//                                                    as a CDN URL signed for GET does
// Errors carry X-Error-Code as the hub's do (RepoNotFound, GatedRepo, EntryNotFound). It records every request and
// can cut the first GET of a file short (headers promise the whole file, half is sent, the socket closes).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace taco::server::testing {

// The socket and routing code is in mock_hub.cc (the only place that compiles Boost.Beast for it).
class MockHub {
public:
    struct Repo {
        std::string commit;
        std::map<std::string, std::string> files;  // name -> bytes
        std::string token;                         // non-empty: gated, needs "Authorization: Bearer TOKEN"
        std::set<std::string> failing;             // files whose bytes always come back 500
    };
    struct Seen {
        std::string method, target, range, authorization;
    };

    MockHub();  // listening on an ephemeral loopback port
    ~MockHub();
    MockHub(const MockHub&) = delete;
    MockHub& operator=(const MockHub&) = delete;

    std::string endpoint() const;  // "http://127.0.0.1:PORT"
    void add_repo(const std::string& id, Repo repo);
    // Requests for `old_id` get a 307 to the same path under `new_id`, as the hub answers for a renamed repository.
    void rename(const std::string& old_id, const std::string& new_id);
    void cut_first_get(const std::string& file);
    std::vector<Seen> requests();
    static bool is_lfs(const std::string& name);
    // A stand-in for the git sha1 (40 hex digits) or LFS sha256 (64) of `bytes`.
    static std::string etag_of(const std::string& name, const std::string& bytes);
    // Closes the listening socket (later connections are refused) and every open connection.
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace taco::server::testing
