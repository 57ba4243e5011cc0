// A blocking HTTP/1.1 client for the server tests, plus a server started in-process. The Boost.Beast code lives in
// test_client.cc alone, so the many tests that include this header do not compile it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/api_server.h"

namespace taco::server::testing {

struct HttpResult {
    int status = 0;
    std::string body;
    std::string retry_after;
    std::string content_type;
    std::vector<std::pair<std::string, std::string>> headers;  // every field, names lower-cased
    nlohmann::json json() const { return nlohmann::json::parse(body); }
    // The first field of that name; "" when absent.
    std::string header(const std::string& lower_name) const;
    bool has_header(const std::string& lower_name) const;
};

// One request on a fresh connection to 127.0.0.1:port (Content-Type application/json).
HttpResult http_call(int port, const std::string& method, const std::string& target, const std::string& body,
                     const std::string& api_key = "");

// The same with extra request fields (Origin, X-Request-Id, ...), each replacing a default field of its name.
HttpResult http_call_with(int port, const std::string& method, const std::string& target, const std::string& body,
                          const std::vector<std::pair<std::string, std::string>>& fields);

// One request over TLS on a fresh connection to 127.0.0.1:port, the server's certificate checked against ca_file
// (for the name 127.0.0.1); cert_file / key_file, when given, are the client's certificate. Throws when the
// handshake fails (an untrusted server, a client certificate required and not sent).
struct TlsClient {
    std::string ca_file;
    std::string cert_file, key_file;
};
HttpResult https_call(int port, const TlsClient& tls, const std::string& method, const std::string& target,
                      const std::string& body);

inline HttpResult post(int port, const std::string& target, const nlohmann::json& body, const std::string& key = "") {
    return http_call(port, "POST", target, body.dump(), key);
}

// The JSON events of an SSE body; `done` tells whether it ended with "data: [DONE]".
std::vector<nlohmann::json> sse_events(const std::string& body, bool* done);

// One keep-alive connection to 127.0.0.1:port, for tests that drive the socket themselves: requests written back
// to back, a client that leaves early (the destructor closes the socket), a stream read as it arrives.
class HttpConnection {
public:
    enum class ReadEnd { kData, kClosed, kTimedOut };

    explicit HttpConnection(int port);  // throws when the connection is refused
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    // Writes one request (Content-Type application/json, keep-alive) and returns without reading.
    void send(const std::string& method, const std::string& target, const std::string& body);
    // Writes `bytes` exactly as given (no framing added); false when the server had closed the connection.
    bool send_raw(const std::string& bytes);
    // Reads the next whole response.
    HttpResult receive();
    // Appends the bytes that arrive next, raw (chunked framing included), to `received`: kData when some came,
    // kClosed when the server closed or reset the connection, kTimedOut when it sent nothing for `timeout_s`.
    // `error`, when given, gets the socket's message for kClosed and kTimedOut.
    ReadEnd read_some(std::string* received, int timeout_s = 30, std::string* error = nullptr);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Writes `bytes` as they are on a fresh connection to 127.0.0.1:port, then returns everything the server sends
// until it closes the connection (`*closed` true) or sends nothing for `timeout_s` (`*closed` false). For requests
// no well-behaved client would write: malformed framing, pipelined bytes, oversized fields.
std::string raw_exchange(int port, const std::string& bytes, int timeout_s = 10, bool* closed = nullptr);

// The status of the first response in raw bytes, 0 when there is none.
int first_status(const std::string& raw);

// A loopback port that nothing listens on (bound once, then closed again).
int unused_loopback_port();

// An engine and a server on an ephemeral loopback port.
struct TestServer {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<ApiServer> server;
    int port = 0;

    // `configure`, when given, changes the engine's config before the engine is made (--scheduling-policy, ...).
    explicit TestServer(const std::string& model_dir, ApiServerOptions options = {},
                        const std::function<void(EngineConfig&)>& configure = nullptr);
    ~TestServer();
};

}  // namespace taco::server::testing
