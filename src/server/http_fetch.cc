#include "server/http_fetch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include <curl/curl.h>

namespace taco::server {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;  // an error page kept for the message; the rest is dropped

struct Transfer {
    const FetchRequest* request;
    FetchResponse* response;
    CURL* curl;
    bool first_write = true;
    bool to_file = false;
    bool file_failed = false;
};

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t start = 0;
    while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
    return s.substr(start);
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        t->response->hops.emplace_back();
        return size * count;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos || t->response->hops.empty()) return size * count;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    t->response->hops.back().emplace_back(std::move(name), trim(line.substr(colon + 1)));
    return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    if (t->first_write) {
        t->first_write = false;
        long code = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        t->to_file = t->request->body_file && (code == 200 || code == 206);
        // A server that ignores the Range header sends the whole file: start the file over.
        if (t->to_file && code == 200 && t->request->range_start > 0) {
            std::fflush(t->request->body_file);
            if (::ftruncate(::fileno(t->request->body_file), 0) != 0 || std::fseek(t->request->body_file, 0, SEEK_SET))
                t->file_failed = true;
        }
    }
    if (t->file_failed) return 0;
    if (t->to_file) {
        if (std::fwrite(data, 1, n, t->request->body_file) != n) {
            t->file_failed = true;
            return 0;  // curl stops with CURLE_WRITE_ERROR
        }
        t->response->bytes_to_file += int64_t(n);
    } else if (t->response->body.size() < kMaxErrorBody || !t->request->body_file) {
        t->response->body.append(data, n);
    }
    return n;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    if (t->to_file && t->request->progress) t->request->progress(int64_t(now), total > 0 ? int64_t(total) : -1);
    return 0;
}

}  // namespace

std::string FetchResponse::header(const std::string& lower_name, bool first) const {
    std::string found;
    for (const auto& hop : hops) {
        for (const auto& [name, value] : hop) {
            if (name != lower_name) continue;
            if (first) return value;
            found = value;
        }
    }
    return found;
}

Status HttpFetch::run(const FetchRequest& request, FetchResponse& response) {
    static std::once_flag init;
    std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    response = FetchResponse{};
    CURL* curl = curl_easy_init();
    if (!curl) return error("libcurl could not start a transfer");
    Transfer transfer{&request, &response, curl};
    curl_slist* headers = nullptr;
    for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    char errbuf[CURL_ERROR_SIZE] = {0};
    const std::string range = request.range_start >= 0 ? std::to_string(request.range_start) + "-" : "";
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "taco-llm/0.1.0");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
    // A transfer that stalls below 1 byte/s for a minute is broken; the caller resumes it.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, request.progress ? 0L : 1L);
    if (request.head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = int(status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (transfer.file_failed) return error("cannot write the downloaded bytes to disk");
    if (code != CURLE_OK)
        return error("{}{}{}", curl_easy_strerror(code), errbuf[0] ? ": " : "", errbuf[0] ? errbuf : "");
    return Status::ok();
}

}  // namespace taco::server
