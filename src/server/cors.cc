#include "server/cors.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

namespace taco::server {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kAllMethods[] = {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
// The CORS-safelisted request headers (Fetch standard), allowed whatever --allowed-headers says.
constexpr const char* kSafelistedHeaders[] = {"Accept", "Accept-Language", "Content-Language", "Content-Type"};
constexpr const char* kMaxAgeSeconds = "600";

std::string lower(std::string text) {
    for (char& c : text) c = char(std::tolower(uint8_t(c)));
    return text;
}

std::string trim(const std::string& text) {
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// Replaces a header of the same name (any case) or adds it.
void set_header(Headers& headers, const std::string& name, const std::string& value) {
    for (auto& [n, v] : headers)
        if (lower(n) == lower(name)) {
            v = value;
            return;
        }
    headers.emplace_back(name, value);
}

void add_vary_origin(Headers& headers) {
    for (auto& [n, v] : headers)
        if (lower(n) == "vary") {
            v += ", Origin";
            return;
        }
    headers.emplace_back("Vary", "Origin");
}

}  // namespace

Status CorsOptions::validate() const {
    const std::pair<const char*, const std::vector<std::string>*> lists[] = {{"--allowed-origins", &allowed_origins},
                                                                             {"--allowed-methods", &allowed_methods},
                                                                             {"--allowed-headers", &allowed_headers}};
    for (const auto& [flag, list] : lists)
        for (const std::string& item : *list) {
            // Each value may be written into a response header: no control characters, no empty names.
            const bool bad = item.empty() || std::any_of(item.begin(), item.end(), [](char c) {
                                 return uint8_t(c) < 0x20 || uint8_t(c) == 0x7f;
                             });
            if (bad) return error("{}: '{}' is not a valid entry (empty, or with control characters)", flag, item);
        }
    return {};
}

CorsPolicy::CorsPolicy(CorsOptions options) : options_(std::move(options)) {
    all_origins_ = contains(options_.allowed_origins, "*");
    all_headers_ = contains(options_.allowed_headers, "*");
    if (contains(options_.allowed_methods, "*"))
        methods_.assign(std::begin(kAllMethods), std::end(kAllMethods));
    else
        methods_ = options_.allowed_methods;
    std::set<std::string> headers(options_.allowed_headers.begin(), options_.allowed_headers.end());
    headers.insert(std::begin(kSafelistedHeaders), std::end(kSafelistedHeaders));
    std::vector<std::string> sorted(headers.begin(), headers.end());
    if (!all_headers_) allow_headers_value_ = join(sorted);
    for (const std::string& header : sorted) allowed_headers_.push_back(lower(header));
}

bool CorsPolicy::origin_allowed(const std::string& origin) const {
    return all_origins_ || contains(options_.allowed_origins, origin);
}

std::optional<Reply> CorsPolicy::preflight(const HttpRequest& request) const {
    const std::string origin = request.header("origin");
    const std::string method = request.header("access-control-request-method");
    if (request.method != "OPTIONS" || !request.has_header("origin") ||
        !request.has_header("access-control-request-method"))
        return std::nullopt;
    // With credentials, or a list of origins, the allowed origin is named (a browser refuses "*" with credentials).
    const bool name_origin = !all_origins_ || options_.allow_credentials;
    Headers headers;
    if (name_origin)
        headers.emplace_back("Vary", "Origin");
    else
        headers.emplace_back("Access-Control-Allow-Origin", "*");
    headers.emplace_back("Access-Control-Allow-Methods", join(methods_));
    headers.emplace_back("Access-Control-Max-Age", kMaxAgeSeconds);
    if (!all_headers_) headers.emplace_back("Access-Control-Allow-Headers", allow_headers_value_);
    if (options_.allow_credentials) headers.emplace_back("Access-Control-Allow-Credentials", "true");

    std::vector<std::string> failures;
    if (!origin_allowed(origin))
        failures.push_back("origin");
    else if (name_origin)
        set_header(headers, "Access-Control-Allow-Origin", origin);
    if (!contains(methods_, method)) failures.push_back("method");
    if (request.has_header("access-control-request-headers")) {
        const std::string requested = request.header("access-control-request-headers");
        if (all_headers_) {
            set_header(headers, "Access-Control-Allow-Headers", requested);  // every header asked for is allowed
        } else {
            size_t start = 0;
            while (start <= requested.size()) {
                const size_t comma = std::min(requested.find(',', start), requested.size());
                if (!contains(allowed_headers_, lower(trim(requested.substr(start, comma - start))))) {
                    failures.push_back("headers");
                    break;
                }
                start = comma + 1;
            }
        }
    }
    // A 400 is not needed (the browser enforces the policy) but says what was refused, as Starlette does.
    if (!failures.empty())
        return Reply{400, "text/plain; charset=utf-8", "Disallowed CORS " + join(failures), std::move(headers)};
    return Reply{200, "text/plain; charset=utf-8", "OK", std::move(headers)};
}

void CorsPolicy::add_response_headers(const HttpRequest& request, Headers& headers) const {
    if (!request.has_header("origin")) return;
    const std::string origin = request.header("origin");
    if (all_origins_) set_header(headers, "Access-Control-Allow-Origin", "*");
    if (options_.allow_credentials) set_header(headers, "Access-Control-Allow-Credentials", "true");
    // A request with cookies gets its origin named: "*" does not cover credentialed requests.
    const bool has_cookie = request.has_header("cookie");
    if ((all_origins_ && has_cookie) || (!all_origins_ && origin_allowed(origin))) {
        set_header(headers, "Access-Control-Allow-Origin", origin);
        add_vary_origin(headers);
    }
}

}  // namespace taco::server
