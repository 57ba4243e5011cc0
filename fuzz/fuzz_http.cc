// The HTTP/1.1 request parser and framing checks (server/http_server.cc) over a real loopback connection: each input
// is sent as the bytes of one connection, then the client half-closes and reads until the server closes. The server
// must answer or refuse without crashing (Beast throws on some oversized input), and must close the connection
// once the client's bytes end: a connection still open after 10 s is reported as a hang. Handlers answer at once,
// or (POST /pending) through a PendingReply polled on the connection's timer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "server/http_server.h"

namespace {

using taco::server::HandlerResult;
using taco::server::HttpRequest;
using taco::server::PendingReply;
using taco::server::Reply;

class CountdownReply : public PendingReply {
public:
    explicit CountdownReply(bool streaming) : streaming_(streaming) {}
    bool streaming() const override { return streaming_; }
    bool poll(std::string& out) override {
        if (streaming_) out += "data: x\n\n";
        return --remaining_ <= 0;
    }
    Reply take_reply() override { return Reply{200, "application/json", "{}", {}}; }
    void cancel() override {}

private:
    bool streaming_;
    int remaining_ = 3;
};

HandlerResult handle(const HttpRequest& request) {
    if (request.target == "/pending" || request.target == "/stream")
        return HandlerResult{{}, std::make_shared<CountdownReply>(request.target == "/stream")};
    return HandlerResult{Reply{200, "application/json", std::to_string(request.body.size()), {}}, nullptr};
}

int server_port() {
    static std::unique_ptr<taco::server::HttpServer> server = [] {
        taco::server::HttpServerOptions options;
        options.host = "127.0.0.1";
        options.port = 0;
        options.num_threads = 1;
        auto created = taco::server::HttpServer::create(options, handle);
        if (!created.is_ok()) {
            std::fprintf(stderr, "fuzz_http: %s\n", created.status().message().c_str());
            std::abort();
        }
        (*created)->start();
        return std::move(*created);
    }();
    return server->port();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int port = server_port();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(uint16_t(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        close(fd);
        return 0;
    }
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    for (size_t sent = 0; sent < size;) {
        const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
        if (n <= 0) break;  // the server refused and closed early
        sent += size_t(n);
    }
    shutdown(fd, SHUT_WR);
    std::string response;
    char buffer[65536];
    for (;;) {
        const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                std::fprintf(stderr, "fuzz_http: the connection is still open 10 s after the client's last byte\n");
                std::abort();
            }
            break;  // reset: fine
        }
        response.append(buffer, size_t(n));
    }
    close(fd);
    if (!response.empty() && response.rfind("HTTP/1.1 ", 0) != 0) {
        std::fprintf(stderr, "fuzz_http: a response that is not HTTP/1.1: %.80s\n", response.c_str());
        std::abort();
    }
    return 0;
}
