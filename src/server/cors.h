// CorsPolicy: cross-origin resource sharing as vLLM serves it (Starlette's CORSMiddleware configured by
// --allowed-origins, --allowed-methods, --allowed-headers and --allow-credentials). Permissive by default: every
// list is ["*"]. A request without an Origin header is none of its business.
//   Preflight (OPTIONS with Origin and Access-Control-Request-Method): answered here, before authentication and
//   routing: 200 "OK" with Access-Control-Allow-* headers, or 400 "Disallowed CORS origin, method, headers" naming
//   what is not allowed (the browser then refuses the real request).
//   Any other request with an Origin: its response (streams too) gets Access-Control-Allow-Origin ("*" when every
//   origin is allowed and the request has no cookie, else the origin itself with Vary: Origin; nothing for an origin
//   not allowed) and Access-Control-Allow-Credentials with --allow-credentials.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/http_server.h"

namespace taco::server {

struct CorsOptions {
    std::vector<std::string> allowed_origins{"*"};  // exact origins ("https://app.example"), or "*"
    std::vector<std::string> allowed_methods{"*"};  // case-sensitive method names, or "*" (all of them)
    std::vector<std::string> allowed_headers{"*"};  // request header names (any case), or "*"
    bool allow_credentials = false;

    Status validate() const;
};

class CorsPolicy {
public:
    explicit CorsPolicy(CorsOptions options = {});

    // The whole reply to a preflight request; nothing for any other request.
    std::optional<Reply> preflight(const HttpRequest& request) const;
    // Adds the CORS headers of a response to `request` (not a preflight) to `headers`.
    void add_response_headers(const HttpRequest& request,
                              std::vector<std::pair<std::string, std::string>>& headers) const;

private:
    bool origin_allowed(const std::string& origin) const;

    CorsOptions options_;
    bool all_origins_ = false;
    bool all_headers_ = false;
    std::vector<std::string> methods_;          // "*" expanded
    std::vector<std::string> allowed_headers_;  // lower-cased, with the CORS-safelisted ones
    std::string allow_headers_value_;           // the preflight's Access-Control-Allow-Headers unless "*"
};

}  // namespace taco::server
