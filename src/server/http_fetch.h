// HttpFetch: blocking HTTP(S) requests through libcurl, for the hub downloader. Redirects are followed and the
// headers of every hop are kept, because the hub puts a file's metadata (X-Linked-Etag, X-Repo-Commit) on the
// redirect to its CDN rather than on the final answer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace taco::server {

struct FetchResponse {
    int status = 0;  // of the last hop
    // One entry per hop, in order; header names lower-cased.
    std::vector<std::vector<std::pair<std::string, std::string>>> hops;
    std::string body;           // GET to a string, or the error body of a GET to a file
    int64_t bytes_to_file = 0;  // body bytes appended to the file

    // The value in the last hop that has `lower_name`, or in the first such hop when `first`; "" when none has it.
    std::string header(const std::string& lower_name, bool first = false) const;
};

// Called while a body streams in: (bytes received so far in this request, the request's Content-Length or -1).
using FetchProgress = std::function<void(int64_t, int64_t)>;

struct FetchRequest {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    bool head = false;                 // HEAD instead of GET
    bool follow_redirects = true;      // false: a 3xx is the answer (its headers in FetchResponse)
    int64_t range_start = -1;          // >= 0: ask for the bytes from here on (Range: bytes=N-)
    std::FILE* body_file = nullptr;    // set: a 200/206 body is appended here instead of FetchResponse::body
    FetchProgress progress;
};

class HttpFetch {
public:
    // Fails only when no HTTP answer came (name resolution, connection, TLS, a transfer cut short: then `response`
    // holds what did arrive, e.g. bytes_to_file). Any HTTP status, 4xx and 5xx included, is a successful fetch.
    static Status run(const FetchRequest& request, FetchResponse& response);
};

}  // namespace taco::server
