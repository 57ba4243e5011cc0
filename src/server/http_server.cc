#include "server/http_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/log.h"

namespace taco::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

constexpr auto kIdleTimeout = std::chrono::seconds(120);  // keep-alive connections with no request
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading
constexpr uint32_t kHeaderLimit = 64 * 1024;
constexpr auto kStopCloseWait = std::chrono::milliseconds(2000);  // stop(): for the strands to close connections

std::string status_error_body(int status, const std::string& message) {
    const char* type = status == 413 ? "BadRequestError" : "BadRequestError";
    return fmt::format(R"({{"error":{{"message":"{}","type":"{}","param":null,"code":{}}}}})", message, type, status);
}

class Session;

struct Shared {
    Handler handler;
    HttpServerOptions options;
    std::atomic<int64_t> open{0};
    std::atomic<bool> stopping{false};  // set by stop(): connections accepted from then on are closed at once
    std::mutex mutex;                   // guards sessions
    std::vector<std::weak_ptr<Session>> sessions;
};

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, std::shared_ptr<Shared> shared)
        : stream_(std::move(socket)), timer_(stream_.get_executor()), shared_(std::move(shared)) {
        shared_->open++;
    }
    ~Session() {
        if (pending_) pending_->cancel();
        shared_->open--;
    }

    void start() {
        {
            std::lock_guard<std::mutex> lock(shared_->mutex);
            auto& all = shared_->sessions;
            if (all.size() > 1024)  // drop the entries of closed connections now and then
                all.erase(std::remove_if(all.begin(), all.end(), [](const auto& w) { return w.expired(); }), all.end());
            all.push_back(weak_from_this());
        }
        // No handler of this session runs yet, so closing it here races with nothing.
        if (shared_->stopping) return force_close();
        net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
    }

    // Aborts the pending reply and closes the socket. Runs on the session's strand (close_on_strand), or once no
    // I/O thread runs; never concurrently with a handler of this session.
    void force_close() {
        if (pending_) pending_->cancel();
        pending_.reset();
        close();
    }

    // force_close() on the strand, after whatever handler of this session is running; then `done()`.
    void close_on_strand(std::function<void()> done) {
        net::post(stream_.get_executor(), [self = shared_from_this(), done = std::move(done)] {
            self->force_close();
            done();
        });
    }

private:
    void read_request() {
        parser_.emplace();
        parser_->body_limit(shared_->options.max_body_bytes);
        parser_->header_limit(kHeaderLimit);
        stream_.expires_after(kIdleTimeout);
        http::async_read(stream_, buffer_, *parser_,
                         [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
    }

    void on_read(error_code ec) {
        if (ec == http::error::body_limit) {
            keep_alive_ = false;
            draining_ = true;
            return send(Reply{413,
                              "application/json",
                              status_error_body(413, fmt::format("request body is over the limit of {} bytes",
                                                                 shared_->options.max_body_bytes)),
                              {}});
        }
        if (ec && ec.category() == beast::error_code(http::error::end_of_stream).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message) {
            keep_alive_ = false;
            return send(Reply{400,
                              "application/json",
                              status_error_body(400, fmt::format("malformed HTTP request: {}", ec.message())),
                              {}});
        }
        if (ec) return close();
        http::request<http::string_body> req = parser_->release();
        HttpRequest request;
        request.method = std::string(req.method_string());
        request.target = std::string(req.target());
        request.body = std::move(req.body());
        for (const auto& field : req) {
            std::string name(field.name_string());
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            request.headers.emplace_back(std::move(name), std::string(field.value()));
        }
        keep_alive_ = req.keep_alive();
        HandlerResult result;
        try {
            result = shared_->handler(request);
        } catch (const std::exception& e) {
            result.reply = Reply{500, "application/json", status_error_body(500, "internal error"), {}};
            log_warn("server: handler threw: {}", e.what());
        }
        if (!result.pending) return send(std::move(result.reply));
        pending_ = std::move(result.pending);
        if (pending_->streaming()) {
            out_ = fmt::format(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                "Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
                keep_alive_ ? "keep-alive" : "close");
            stream_done_ = false;
            write_stream();
        } else {
            watch_for_disconnect();
            poll_whole();
        }
    }

    // While a non-streaming reply is computed nothing is written, so only a read notices the client leaving: one
    // read stays outstanding until then. Bytes that arrive (a pipelined request) are kept in buffer_ for the next
    // read_request(). When the reply is ready the read is cancelled and the reply sent from its handler.
    void watch_for_disconnect() {
        watching_ = true;
        stream_.expires_never();  // a long computation is no idle connection
        const size_t room = kHeaderLimit;
        stream_.async_read_some(buffer_.prepare(room), [self = shared_from_this()](error_code ec, size_t n) {
            self->watching_ = false;
            self->buffer_.commit(n);
            if (self->ready_) {
                Reply reply = std::move(*self->ready_);
                self->ready_.reset();
                return self->send(std::move(reply));
            }
            if (!ec && self->pending_) {
                if (self->buffer_.size() < kHeaderLimit) self->watch_for_disconnect();
                return;
            }
            if (ec && self->pending_) {  // EOF or reset: the client is gone
                self->pending_->cancel();
                self->pending_.reset();
                self->close();
            }
        });
    }

    void send(Reply reply) {
        auto res = std::make_shared<http::response<http::string_body>>(http::int_to_status(unsigned(reply.status)), 11);
        res->set(http::field::server, "taco-llm");
        res->set(http::field::content_type, reply.content_type);
        for (auto& [name, value] : reply.headers) res->set(name, value);
        res->keep_alive(keep_alive_);
        res->body() = std::move(reply.body);
        res->prepare_payload();
        stream_.expires_after(kWriteTimeout);
        http::async_write(stream_, *res, [self = shared_from_this(), res](error_code ec, size_t) {
            if (ec) return self->close();
            if (self->draining_) return self->drain();
            if (!self->keep_alive_) return self->close();
            self->read_request();
        });
    }

    // After a 413 the rest of the body is read and dropped, so the client sees the reply rather than a reset.
    void drain() {
        error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream_.expires_after(std::chrono::seconds(10));
        auto scratch = std::make_shared<std::array<char, 65536>>();
        stream_.async_read_some(net::buffer(*scratch), [self = shared_from_this(), scratch](error_code ec, size_t) {
            if (ec) return self->close();
            self->drain();
        });
    }

    void poll_whole() {
        if (!pending_) return;  // force_close() ran
        std::string ignored;
        if (pending_->poll(ignored)) {
            Reply reply = pending_->take_reply();
            pending_.reset();
            if (!watching_) return send(std::move(reply));
            ready_ = std::move(reply);  // sent once the watching read has been cancelled
            stream_.cancel();
            return;
        }
        wait_then([](Session& s) { s.poll_whole(); });
    }

    void poll_stream() {
        if (!pending_) return;  // force_close() ran
        std::string data;
        stream_done_ = pending_->poll(data);
        if (data.empty() && !stream_done_) return wait_then([](Session& s) { s.poll_stream(); });
        poll_wait_us_ = 0;
        out_.clear();
        if (!data.empty()) out_ = fmt::format("{:x}\r\n{}\r\n", data.size(), data);
        if (stream_done_) out_ += "0\r\n\r\n";
        write_stream();
    }

    void write_stream() {
        stream_.expires_after(kWriteTimeout);
        net::async_write(stream_, net::buffer(out_), [self = shared_from_this()](error_code ec, size_t) {
            if (ec) return self->close();  // the destructor cancels the pending reply
            if (!self->stream_done_) return self->poll_stream();
            self->pending_.reset();
            if (!self->keep_alive_) return self->close();
            self->read_request();
        });
    }

    template <typename F>
    void wait_then(F next) {
        const HttpServerOptions& o = shared_->options;
        poll_wait_us_ = poll_wait_us_ == 0 ? o.min_poll_us : std::min(poll_wait_us_ * 2, o.max_poll_us);
        timer_.expires_after(std::chrono::microseconds(poll_wait_us_));
        timer_.async_wait([self = shared_from_this(), next](error_code ec) {
            if (ec) return;
            next(*self);
        });
    }

    void close() {
        error_code ignored;
        timer_.cancel();
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
    }

    beast::tcp_stream stream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    std::shared_ptr<Shared> shared_;
    std::shared_ptr<PendingReply> pending_;
    std::string out_;
    bool keep_alive_ = true;
    bool stream_done_ = false;
    bool draining_ = false;
    int poll_wait_us_ = 0;        // the current idle wait between polls; 0 after a poll that found data
    bool watching_ = false;       // watch_for_disconnect()'s read is outstanding
    std::optional<Reply> ready_;  // a finished non-streaming reply waiting for that read to end
};

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return value;
    return "";
}

// Counts closes still to happen; stop() waits (bounded) for them.
struct CloseLatch {
    std::mutex mutex;
    std::condition_variable done;
    int64_t remaining = 0;

    void count_down() {
        std::lock_guard<std::mutex> lock(mutex);
        if (--remaining == 0) done.notify_all();
    }
    void wait_for(std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> lock(mutex);
        done.wait_for(lock, timeout, [this] { return remaining <= 0; });
    }
};

struct HttpServer::Impl {
    net::io_context ioc;
    // The acceptor's handlers and its close run on one strand: a close from stop() never races an accept handler
    // that is starting the next accept.
    tcp::acceptor acceptor{net::make_strand(ioc)};
    std::shared_ptr<Shared> shared = std::make_shared<Shared>();
    std::vector<std::thread> threads;
    std::optional<net::steady_timer> retry_timer;
    bool stopped = false;

    void close_acceptor() {
        net::post(acceptor.get_executor(), [this] {
            error_code ignored;
            acceptor.close(ignored);
            if (retry_timer) retry_timer->cancel();
        });
    }
    std::vector<std::shared_ptr<Session>> take_sessions() {
        std::vector<std::weak_ptr<Session>> weak;
        {
            std::lock_guard<std::mutex> lock(shared->mutex);
            weak.swap(shared->sessions);
        }
        std::vector<std::shared_ptr<Session>> live;
        for (const auto& w : weak)
            if (auto session = w.lock()) live.push_back(std::move(session));
        return live;
    }

    void accept() {
        acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (ec) {  // e.g. out of file descriptors: try again shortly instead of spinning
                retry_timer.emplace(acceptor.get_executor(), std::chrono::milliseconds(50));
                retry_timer->async_wait([this](error_code) { accept(); });
                return;
            }
            std::make_shared<Session>(std::move(socket), shared)->start();
            accept();
        });
    }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::create(const HttpServerOptions& options, Handler handler) {
    auto impl = std::make_unique<Impl>();
    impl->shared->handler = std::move(handler);
    impl->shared->options = options;
    error_code ec;
    auto address = net::ip::make_address(options.host, ec);
    if (ec) return error("--host '{}' is not an IP address", options.host);
    if (options.port < 0 || options.port > 65535) return error("--port {} is out of range", options.port);
    tcp::endpoint endpoint(address, uint16_t(options.port));
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(endpoint, ec);
    if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return error("cannot listen on {}:{}: {}", options.host, options.port, ec.message());
    const int port = impl->acceptor.local_endpoint().port();
    auto server = std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
    server->port_ = port;
    return server;
}

void HttpServer::start() {
    impl_->accept();
    const int n = std::max(1, impl_->shared->options.num_threads);
    for (int i = 0; i < n; ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

void HttpServer::stop_accepting() { impl_->close_acceptor(); }

void HttpServer::stop() {
    if (impl_->stopped) return;
    impl_->stopped = true;
    impl_->shared->stopping = true;
    impl_->close_acceptor();
    // Every connection is closed on its own strand while the I/O threads still run, so a close never overlaps a
    // handler of the same session (closing from this thread while a handler runs, or after the threads stopped with
    // handlers still queued, is what can leave a client waiting). Bounded: a handler stuck in the engine cannot
    // hold the shutdown.
    std::vector<std::shared_ptr<Session>> sessions = impl_->take_sessions();
    if (!impl_->threads.empty() && !sessions.empty()) {
        auto latch = std::make_shared<CloseLatch>();
        latch->remaining = int64_t(sessions.size());
        for (const auto& session : sessions) session->close_on_strand([latch] { latch->count_down(); });
        latch->wait_for(kStopCloseWait);
    }
    impl_->ioc.stop();
    for (std::thread& t : impl_->threads) t.join();
    impl_->threads.clear();
    // With no I/O thread left nothing races: close what the strands did not get to (and connections accepted
    // meanwhile), then run the handlers the closes completed, which releases the sessions.
    for (const auto& session : sessions) session->force_close();
    for (const auto& session : impl_->take_sessions()) session->force_close();
    sessions.clear();
    impl_->ioc.restart();
    impl_->ioc.poll();
}

int64_t HttpServer::num_open_connections() const { return impl_->shared->open.load(); }

}  // namespace taco::server
