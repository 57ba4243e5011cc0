// HttpServer: an asynchronous HTTP/1.1 server (Boost.Beast), over TLS (OpenSSL through Asio) when configured, with
// keep-alive and chunked streaming. Each
// connection runs on its own strand; a handler answers at once (Reply) or hands back a PendingReply that the
// connection polls on a timer, so no I/O thread ever blocks on the engine and thousands of streams can be open.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"

namespace taco::server {

struct HttpRequest {
    std::string method;  // "GET", "POST", ...
    std::string target;  // path with query
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased

    // The first field of that name; "" when absent.
    std::string header(const std::string& lower_name) const;
    bool has_header(const std::string& lower_name) const;
};

struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// Work in flight for one request; every call comes from the connection's strand, one at a time.
class PendingReply {
public:
    virtual ~PendingReply() = default;
    // True: the response is a server-sent-event stream (chunked); false: one Reply once poll() returns true.
    virtual bool streaming() const = 0;
    // Appends what is ready to `out` (SSE text when streaming); true once nothing more will come.
    virtual bool poll(std::string& out) = 0;
    // The whole response of a non-streaming request, after poll() returned true.
    virtual Reply take_reply() = 0;
    // The client went away before the end: abort the work.
    virtual void cancel() = 0;
};

struct HandlerResult {
    Reply reply;
    // When set, only `reply.headers` of `reply` is used: they join the pending reply's response (the stream's header,
    // or the headers of take_reply()'s Reply).
    std::shared_ptr<PendingReply> pending;
};

using Handler = std::function<HandlerResult(const HttpRequest&)>;

// Every size limit on what a client may send, in one place. A request over a limit gets a 4xx on its own
// connection (which is then closed) and never reaches a handler; nothing a client sends can exhaust memory or abort
// the process.
struct HttpLimits {
    // The request line plus all header fields, CRLFs included: more gets 431. Kept below 65533 so that no single
    // field can reach Beast's per-field maximum (which it reports by throwing).
    uint32_t header_bytes = 60 * 1024;
    // The decoded body (Content-Length, or the sum of the chunk sizes): more gets 413, refused at the header when
    // the length is declared (before any body byte is read, so an `Expect: 100-continue` client sends nothing).
    uint64_t body_bytes = 32ull << 20;
    // One chunk-size line with its chunk extensions (more: 400), and the trailer section after the last chunk (more:
    // 431). Trailer fields are read and discarded: they never join the request's headers.
    uint32_t chunk_line_bytes = 4 * 1024;
    uint32_t trailer_bytes = 8 * 1024;
};

// TLS as uvicorn serves it under vLLM's --ssl-* flags: on when certfile is set.
struct TlsOptions {
    std::string certfile;  // PEM: the server's certificate chain (and its key when keyfile is empty)
    std::string keyfile;   // PEM private key
    std::string ca_certs;  // PEM CA certificates that client certificates are checked against
    // Python's ssl.VerifyMode as vLLM's --ssl-cert-reqs takes it: 0 no client certificate asked (CERT_NONE),
    // 1 checked when sent (CERT_OPTIONAL), 2 required (CERT_REQUIRED). 1 and 2 need ca_certs.
    int cert_reqs = 0;

    bool enabled() const { return !certfile.empty(); }
    Status validate() const;
};

struct HttpServerOptions {
    std::string host = "0.0.0.0";
    int port = 8000;      // 0: an ephemeral port (see HttpServer::port())
    int num_threads = 2;  // I/O threads
    HttpLimits limits;
    // Pending replies are polled after min_poll_us while idle; each empty poll doubles the wait up to
    // max_poll_us, so thousands of quiet streams cost little CPU and a busy one is seen within min_poll_us.
    int min_poll_us = 500;
    int max_poll_us = 8000;
    // A keep-alive connection with no request for this long is closed (and a request must arrive within it).
    int idle_timeout_ms = 120'000;
    TlsOptions tls;
};

class HttpServer {
public:
    // Binds and listens; serving starts with start().
    static Result<std::unique_ptr<HttpServer>> create(const HttpServerOptions& options, Handler handler);
    ~HttpServer();

    void start();
    // Stops accepting new connections; open ones are served on.
    void stop_accepting();
    // Stops accepting and closes every connection (pending replies are cancelled); joins the I/O threads.
    void stop();
    int port() const { return port_; }
    int64_t num_open_connections() const;

private:
    struct Impl;
    explicit HttpServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
    int port_ = 0;
};

}  // namespace taco::server
