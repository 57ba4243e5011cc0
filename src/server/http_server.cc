#include "server/http_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <nlohmann/json.hpp>

#include "core/log.h"

namespace taco::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading
constexpr auto kDrainTime = std::chrono::seconds(10);     // after a rejected request: the most time spent reading on
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);  // a TLS client that does not finish its handshake
// After our TLS close_notify, the wait for the client's (or its EOF) before the socket closes: a client need not
// answer, and stop() waits kStopCloseWait for every connection.
constexpr auto kTlsShutdownTimeout = std::chrono::milliseconds(1000);
constexpr auto kStopCloseWait = std::chrono::milliseconds(2000);  // stop(): for the strands to close connections
// Bytes asked of one read: small while a header, chunk-size line or trailer is pending (those stay buffered until
// complete, so this bounds how far past its limit one can get before it is refused), larger for a counted body.
constexpr size_t kSmallRead = 16 * 1024;
constexpr size_t kBodyRead = 64 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string status_error_body(int status, const std::string& message) {
    const char* type = status >= 500 ? "InternalServerError" : "BadRequestError";
    if (status == 501) type = "NotImplementedError";
    const nlohmann::json body = {
        {"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}};
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// A header field a handler may send: a token for a name, a value without CR, LF or NUL (a value echoed from a request
// never splits the response).
bool is_field(std::string_view name, std::string_view value) {
    if (name.empty()) return false;
    for (char c : name)
        if (!std::isalnum(uint8_t(c)) && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
            return false;
    return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// A request the connection refuses before any handler sees it.
struct Rejection {
    int status;
    std::string message;
};

// The framing checks of RFC 9112 that Beast leaves to the server, on a request whose header is complete.
std::optional<Rejection> check_framing(const HttpRequest& request, unsigned version) {
    size_t hosts = 0;
    bool has_length = false;
    bool has_transfer_encoding = false;
    std::vector<std::string> codings;  // every transfer coding, in order, over all Transfer-Encoding lines
    for (const auto& [name, value] : request.headers) {
        if (name == "host") hosts++;
        if (name == "content-length") has_length = true;
        if (name != "transfer-encoding") continue;
        has_transfer_encoding = true;
        std::string_view list = value;
        while (!list.empty()) {
            const size_t comma = std::min(list.find(','), list.size());
            std::string_view coding = trim(list.substr(0, comma));
            coding = trim(coding.substr(0, coding.find(';')));  // a coding's parameters
            if (!coding.empty()) codings.push_back(lower(coding));
            list.remove_prefix(std::min(comma + 1, list.size()));
        }
    }
    if (hosts > 1) return Rejection{400, fmt::format("the request has {} Host headers; exactly one is allowed", hosts)};
    if (hosts == 0 && version >= 11) return Rejection{400, "an HTTP/1.1 request needs a Host header"};
    if (!has_transfer_encoding) return std::nullopt;
    // Both framings at once is the classic request-smuggling vector: refuse rather than pick one.
    if (has_length) return Rejection{400, "the request has both Content-Length and Transfer-Encoding"};
    if (version < 11) return Rejection{400, "Transfer-Encoding is not allowed in an HTTP/1.0 request"};
    for (const std::string& coding : codings)
        if (coding != "chunked")
            return Rejection{501, fmt::format("transfer coding '{}' is not supported (only chunked is)", coding)};
    if (codings.size() != 1) return Rejection{400, "Transfer-Encoding must name chunked exactly once"};
    return std::nullopt;
}

// What stop() needs of a connection, plain or TLS.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
public:
    virtual ~SessionBase() = default;
    // Aborts the pending reply and closes the socket. Runs on the session's strand (close_on_strand), or once no
    // I/O thread runs; never concurrently with a handler of this session.
    virtual void force_close() = 0;
    // force_close() on the strand, after whatever handler of this session is running; then `done()`.
    virtual void close_on_strand(std::function<void()> done) = 0;
};

struct Shared {
    Handler handler;
    HttpServerOptions options;
    std::atomic<int64_t> open{0};
    std::atomic<bool> stopping{false};  // set by stop(): connections accepted from then on are closed at once
    std::mutex mutex;                   // guards sessions
    std::vector<std::weak_ptr<SessionBase>> sessions;
};

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection. Stream: beast::tcp_stream, or TlsStream over it (--ssl-certfile), whose handshake comes first.
template <class Stream>
class Session : public SessionBase {
public:
    static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

    template <class... StreamArgs>
    explicit Session(std::shared_ptr<Shared> shared, StreamArgs&&... stream_args)
        : stream_(std::forward<StreamArgs>(stream_args)...),
          timer_(stream_.get_executor()),
          shared_(std::move(shared)) {
        shared_->open++;
    }
    ~Session() override {
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
        net::dispatch(stream_.get_executor(), [self = self_ptr()] { self->begin(); });
    }

    void force_close() override {
        if (pending_) pending_->cancel();
        pending_.reset();
        close();
    }

    void close_on_strand(std::function<void()> done) override {
        net::post(stream_.get_executor(), [self = self_ptr(), done = std::move(done)]() mutable {
            // A response being written (or a whole reply about to be) goes out first, so a reply that a shutdown
            // ended (an aborted stream's last chunks, a 503) reaches its client: the write's end closes.
            if (self->writing_ || self->ready_) {
                self->close_done_ = std::move(done);
                return;
            }
            // TLS between requests (the next one's read pending, nothing of it come): the read is cancelled and its
            // handler ends the session cleanly (end_tls), as after a reply.
            if constexpr (kTls) {
                if (self->awaiting_request() && !self->tls_ended_) {
                    self->close_done_ = std::move(done);
                    self->tcp().cancel();
                    return;
                }
            }
            self->force_close();
            done();
        });
    }

private:
    std::shared_ptr<Session> self_ptr() { return std::static_pointer_cast<Session>(shared_from_this()); }
    beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

    // TLS: the handshake (bounded in time), then the first request; plain: the first request.
    void begin() {
        if constexpr (kTls) {
            tcp().expires_after(kHandshakeTimeout);
            stream_.async_handshake(net::ssl::stream_base::server, [self = self_ptr()](error_code ec) {
                if (ec) return self->close();  // not TLS, an untrusted client certificate, or too slow
                self->read_request();
            });
        } else {
            read_request();
        }
    }

    // Requests are parsed here rather than by http::async_read: Beast reports some oversized input by throwing from
    // inside the parser, and only a put() of our own can catch that and answer this connection alone. Bytes left
    // after a request (a pipelined one) stay in buffer_ for the next.
    void read_request() {
        const HttpLimits& limits = shared_->options.limits;
        parser_.emplace();
        parser_->eager(false);  // one step per put(): the header is checked before any body byte is taken
        parser_->body_limit(limits.body_bytes);
        parser_->header_limit(limits.header_bytes);
        chunk_line_too_long_ = false;
        // Beast keeps a reference to the callback, so it is a member that outlives every parser.
        parser_->on_chunk_header(on_chunk_header_);
        request_ = HttpRequest{};
        header_checked_ = false;
        head_ = false;
        tcp().expires_after(idle_timeout());
        if constexpr (kTls) end_tls_when_idle();
        parse_buffered();
    }

    // Called by the parser for every chunk-size line, the last one included.
    void on_chunk_header(beast::string_view extensions, error_code& ec) {
        if (extensions.size() <= shared_->options.limits.chunk_line_bytes) return;
        chunk_line_too_long_ = true;
        ec = http::error::bad_chunk_extension;
    }

    void parse_buffered() {
        error_code ec;
        try {
            while (!parser_->is_done()) {
                if (buffer_.size() == 0) {
                    ec = http::error::need_more;
                    break;
                }
                const size_t used = parser_->put(buffer_.data(), ec);
                buffer_.consume(used);
                if (ec) break;
                if (!header_checked_ && parser_->is_header_done()) {
                    header_checked_ = true;
                    if (!on_header()) return;  // rejected, or a 100 Continue is being written
                }
                if (used == 0 && !parser_->is_done()) {  // no progress on what is buffered: wait for more
                    ec = http::error::need_more;
                    break;
                }
            }
        } catch (const std::length_error& e) {  // Beast: a single field over its maximum
            return reject(431, fmt::format("a header or trailer field is too large: {}", e.what()));
        } catch (const std::exception& e) {
            return reject(400, fmt::format("malformed HTTP request: {}", e.what()));
        }
        if (ec == http::error::need_more) {
            if (auto rejection = check_pending_chunk_metadata()) return reject(rejection->status, rejection->message);
            return read_more();
        }
        if (ec) return reject_parse_error(ec);
        on_request();
    }

    void read_more() {
        const size_t room = header_checked_ && !parser_->chunked() ? kBodyRead : kSmallRead;
        reading_ = true;
        stream_.async_read_some(buffer_.prepare(room), [self = self_ptr()](error_code ec, size_t n) {
            self->reading_ = false;
            self->buffer_.commit(n);
            if (self->close_done_) return void(self->written_then_closed());  // stop(): close_on_strand cancelled it
            if (self->idle_ended_) return self->close_after_reply();          // end_tls_when_idle() cancelled it
            if (ec) return self->close();  // EOF, reset or the idle timeout; a partial request gets no reply
            self->parse_buffered();
        });
    }

    // The header is complete: copy it (trailer fields, parsed later into the same Beast fields, never join it) and
    // apply the checks Beast leaves to us. False when the parse must not go on now.
    bool on_header() {
        const auto& message = parser_->get();
        request_.method = std::string(message.method_string());
        request_.target = std::string(message.target());
        for (const auto& field : message)
            request_.headers.emplace_back(lower(std::string(field.name_string())), std::string(field.value()));
        head_ = message.method() == http::verb::head;
        keep_alive_ = message.keep_alive();
        if (auto rejection = check_framing(request_, message.version())) {
            reject(rejection->status, rejection->message);
            return false;
        }
        const std::string expect = lower(trim(request_.header("expect")));
        if (expect.empty() || message.version() < 11) return true;  // HTTP/1.0 clients do not wait: ignore it
        if (expect != "100-continue") {
            reject(417, fmt::format("Expect: '{}' is not supported (only 100-continue is)", expect));
            return false;
        }
        if (parser_->is_done()) return true;  // no body to ask for
        // The body limit was checked against Content-Length already, so only a request we will read is told to go on.
        tcp().expires_after(kWriteTimeout);
        writing_ = true;
        net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                         [self = self_ptr()](error_code ec, size_t) {
                             if (self->written_then_closed()) return;
                             if (ec) return self->close();
                             self->tcp().expires_after(self->idle_timeout());
                             self->parse_buffered();
                         });
        return false;
    }

    // need_more while a chunked body is read means the buffer holds one incomplete chunk-size line, or the last
    // chunk's line and an incomplete trailer section (chunk data is taken as it comes): bound both.
    std::optional<Rejection> check_pending_chunk_metadata() const {
        if (!header_checked_ || !parser_->chunked()) return std::nullopt;
        const HttpLimits& limits = shared_->options.limits;
        const std::string_view pending(static_cast<const char*>(buffer_.data().data()), buffer_.size());
        const size_t skip = pending.rfind("\r\n", 0) == 0 ? 2 : 0;  // the CRLF that ends the previous chunk's data
        const size_t eol = pending.find("\r\n", skip);
        const size_t line = (eol == std::string_view::npos ? pending.size() : eol) - skip;
        if (line > limits.chunk_line_bytes + 16)  // room for the chunk size itself
            return Rejection{400, fmt::format("a chunk-size line (with its extensions) is over the limit of {} bytes",
                                              limits.chunk_line_bytes)};
        if (eol != std::string_view::npos && pending.size() - eol - 2 > limits.trailer_bytes)
            return Rejection{431, fmt::format("the chunked body's trailer section is over the limit of {} bytes",
                                              limits.trailer_bytes)};
        return std::nullopt;
    }

    void reject_parse_error(error_code ec) {
        const HttpLimits& limits = shared_->options.limits;
        if (ec == http::error::body_limit)
            return reject(413, fmt::format("request body is over the limit of {} bytes", limits.body_bytes));
        if (ec == http::error::header_limit)
            return reject(431,
                          fmt::format("request header fields are over the limit of {} bytes", limits.header_bytes));
        if (chunk_line_too_long_)
            return reject(400, fmt::format("a chunk extension is over the limit of {} bytes", limits.chunk_line_bytes));
        reject(400, fmt::format("malformed HTTP request: {}", ec.message()));
    }

    // A refused request: the reply, then the connection is closed. What the client still sends is read and dropped
    // for a while (drain()), so it sees the reply rather than a reset, and none of it is taken as a new request.
    void reject(int status, const std::string& message) {
        keep_alive_ = false;
        draining_ = true;
        send(Reply{status, "application/json", status_error_body(status, message), {}});
    }

    void on_request() {
        request_.body = std::move(parser_->get().body());
        parser_.reset();
        HandlerResult result;
        try {
            result = shared_->handler(request_);
        } catch (const std::exception& e) {
            result =
                HandlerResult{Reply{500, "application/json", status_error_body(500, "internal error"), {}}, nullptr};
            log_warn("server: handler threw: {}", e.what());
        } catch (...) {
            result =
                HandlerResult{Reply{500, "application/json", status_error_body(500, "internal error"), {}}, nullptr};
            log_warn("server: handler threw a non-standard exception");
        }
        if (!result.pending) return send(std::move(result.reply));
        pending_ = std::move(result.pending);
        pending_headers_ = std::move(result.reply.headers);
        if (pending_->streaming() && !head_) {
            out_ = fmt::format(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                "Transfer-Encoding: chunked\r\nConnection: {}\r\n",
                keep_alive_ ? "keep-alive" : "close");
            for (const auto& [name, value] : pending_headers_)
                if (is_field(name, value)) out_ += name + ": " + value + "\r\n";
            out_ += "\r\n";
            stream_done_ = false;
            write_stream();
        } else if (pending_->streaming()) {  // HEAD of a stream: a header and no body, so no work to do
            pending_->cancel();
            pending_.reset();
            send(Reply{200, "text/event-stream", "", std::move(pending_headers_)});
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
        tcp().expires_never();  // a long computation is no idle connection
        const size_t room = kSmallRead;
        stream_.async_read_some(buffer_.prepare(room), [self = self_ptr()](error_code ec, size_t n) {
            self->watching_ = false;
            self->buffer_.commit(n);
            if (self->ready_) {
                Reply reply = std::move(*self->ready_);
                self->ready_.reset();
                return self->send(std::move(reply));
            }
            if (!ec && self->pending_) {
                if (self->buffer_.size() < self->shared_->options.limits.header_bytes) self->watch_for_disconnect();
                return;
            }
            if (ec && self->pending_) {  // EOF or reset: the client is gone
                self->pending_->cancel();
                self->pending_.reset();
                self->close();
            }
        });
    }

    // A response and the serializer writing it (which refers to it, so both live in one place that does not move).
    struct Outgoing {
        http::response<http::string_body> response;
        std::optional<http::response_serializer<http::string_body>> serializer;
    };

    void send(Reply reply) {
        auto out = std::make_shared<Outgoing>();
        auto& res = out->response;
        res.result(http::int_to_status(unsigned(reply.status)));
        res.version(11);
        res.set(http::field::server, "taco-llm");
        res.set(http::field::content_type, reply.content_type);
        for (auto& [name, value] : reply.headers)
            if (is_field(name, value)) res.set(name, value);
        res.keep_alive(keep_alive_);
        res.body() = std::move(reply.body);
        res.prepare_payload();  // Content-Length: for HEAD too, the length a GET would get (RFC 9110 9.3.2)
        out->serializer.emplace(res);
        tcp().expires_after(kWriteTimeout);
        writing_ = true;
        auto then = [self = self_ptr(), out](error_code ec, size_t) {
            if (self->written_then_closed()) return;
            if (ec) return self->close();
            if (self->draining_) return self->drain();
            if (!self->keep_alive_) return self->close_after_reply();
            self->read_request();
        };
        // A response to HEAD has no body: one written would be read as the start of the next response.
        if (head_) return http::async_write_header(stream_, *out->serializer, std::move(then));
        http::async_write(stream_, *out->serializer, std::move(then));
    }

    // After a rejected request the rest of what the client sends is read and dropped, for kDrainTime at most. TLS
    // ends its session first (end_tls: the client sees the reply end cleanly); the bytes after are dropped unread.
    void drain() {
        if constexpr (kTls) {
            if (!tls_ended_) return end_tls([](Session& s) { s.drain(); });
        }
        if (!drain_started_) {
            drain_started_ = true;
            error_code ignored;
            tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
            tcp().expires_after(kDrainTime);
        }
        auto scratch = std::make_shared<std::array<char, 65536>>();
        tcp().async_read_some(net::buffer(*scratch), [self = self_ptr(), scratch](error_code ec, size_t) {
            if (ec) return self->close();
            self->drain();
        });
    }

    // A pending reply that throws fails its own request only: a 500 if nothing was sent yet, else the stream ends.
    bool poll_pending(std::string& out, bool& failed) {
        try {
            return pending_->poll(out);
        } catch (const std::exception& e) {
            log_warn("server: a pending reply threw: {}", e.what());
        } catch (...) {
            log_warn("server: a pending reply threw a non-standard exception");
        }
        failed = true;
        return true;
    }

    void poll_whole() {
        if (!pending_) return;  // force_close() ran
        std::string ignored;
        bool failed = false;
        if (poll_pending(ignored, failed)) {
            Reply reply{500, "application/json", status_error_body(500, "internal error"), {}};
            if (!failed) {
                try {
                    reply = pending_->take_reply();
                } catch (...) {
                    log_warn("server: a pending reply's take_reply() threw");
                }
            }
            for (auto& header : pending_headers_) reply.headers.push_back(std::move(header));
            pending_headers_.clear();
            pending_.reset();
            if (!watching_) return send(std::move(reply));
            ready_ = std::move(reply);  // sent once the watching read has been cancelled
            tcp().cancel();
            return;
        }
        wait_then([](Session& s) { s.poll_whole(); });
    }

    void poll_stream() {
        if (!pending_) return;  // force_close() ran
        std::string data;
        bool failed = false;
        stream_done_ = poll_pending(data, failed);
        if (failed) return force_close();  // the status line went out long ago: ending the stream is all we can do
        if (data.empty() && !stream_done_) return wait_then([](Session& s) { s.poll_stream(); });
        poll_wait_us_ = 0;
        out_.clear();
        if (!data.empty()) out_ = fmt::format("{:x}\r\n{}\r\n", data.size(), data);
        if (stream_done_) out_ += "0\r\n\r\n";
        write_stream();
    }

    void write_stream() {
        tcp().expires_after(kWriteTimeout);
        writing_ = true;
        net::async_write(stream_, net::buffer(out_), [self = self_ptr()](error_code ec, size_t) {
            if (self->written_then_closed()) return;
            if (ec) return self->close();  // the destructor cancels the pending reply
            if (!self->stream_done_) return self->poll_stream();
            self->pending_.reset();
            if (!self->keep_alive_) return self->close_after_reply();
            self->read_request();
        });
    }

    template <typename F>
    void wait_then(F next) {
        const HttpServerOptions& o = shared_->options;
        poll_wait_us_ = poll_wait_us_ == 0 ? o.min_poll_us : std::min(poll_wait_us_ * 2, o.max_poll_us);
        timer_.expires_after(std::chrono::microseconds(poll_wait_us_));
        timer_.async_wait([self = self_ptr(), next](error_code ec) {
            if (ec) return;
            next(*self);
        });
    }

    // At the end of every write (and of a read close_on_strand cancelled): false, or true once the connection was
    // closed because stop() asked for it meanwhile (close_on_strand).
    bool written_then_closed() {
        writing_ = false;
        if (!close_done_) return false;
        std::function<void()> done = std::move(close_done_);
        close_done_ = nullptr;
        if (pending_) pending_->cancel();
        pending_.reset();
        if constexpr (kTls) {
            if (!tls_ended_) {
                end_tls([done](Session& s) {
                    s.close();
                    done();
                });
                return true;
            }
        }
        close();
        done();
        return true;
    }

    std::chrono::milliseconds idle_timeout() const {
        return std::chrono::milliseconds(shared_->options.idle_timeout_ms);
    }

    // True between requests: the next one's read is pending and nothing of it has come.
    bool awaiting_request() const { return reading_ && parser_ && !parser_->got_some() && buffer_.size() == 0; }

    // TLS: a connection idle for idle_timeout() ends its session cleanly (end_tls) rather than by the stream's
    // timeout, which closes the socket at once. timer_ fires first and cancels the read, whose handler ends TLS; the
    // stream's timeout, a little later, still bounds a request that started. A reply's polls take timer_ over.
    void end_tls_when_idle() {
        tcp().expires_after(idle_timeout() + 2 * kTlsShutdownTimeout);
        timer_.expires_after(idle_timeout());
        timer_.async_wait([self = self_ptr()](error_code ec) {
            if (ec || !self->awaiting_request() || self->tls_ended_) return;
            self->idle_ended_ = true;
            self->tcp().cancel();
        });
    }

    // The connection ends after a complete reply: TLS says so first (end_tls), then the socket closes.
    void close_after_reply() {
        if constexpr (kTls) {
            if (!tls_ended_) return end_tls([](Session& s) { s.close(); });
        }
        close();
    }

    // TLS: our close_notify (SSL_shutdown), so the client can tell a reply that ended from a connection cut short (its
    // read ends in a clean EOF, not a truncated stream); then the wait for the client's close_notify or EOF,
    // kTlsShutdownTimeout at most; then next(*this). Only with no other operation of the stream under way.
    template <typename F>
    void end_tls(F next) {
        tls_ended_ = true;
        tcp().expires_after(kTlsShutdownTimeout);
        stream_.async_shutdown([self = self_ptr(), next](error_code) { next(*self); });
    }

    void close() {
        error_code ignored;
        timer_.cancel();
        tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
        tcp().close();
    }

    Stream stream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    HttpRequest request_;               // the request being read: its header once complete, then its body
    bool header_checked_ = false;       // on_header() ran for the request being read
    bool chunk_line_too_long_ = false;  // the parser stopped on a chunk extension over the limit
    bool head_ = false;                 // the request being answered is HEAD: the reply has no body
    bool drain_started_ = false;
    bool tls_ended_ = false;   // end_tls() ran: the TLS session is over, only the socket is left
    bool idle_ended_ = false;  // end_tls_when_idle() cancelled the read of a request that never came
    std::function<void(uint64_t, beast::string_view, error_code&)> on_chunk_header_ =
        [this](uint64_t, beast::string_view extensions, error_code& ec) { on_chunk_header(extensions, ec); };
    std::shared_ptr<Shared> shared_;
    std::shared_ptr<PendingReply> pending_;
    std::vector<std::pair<std::string, std::string>> pending_headers_;  // the handler's headers for pending_'s reply
    std::string out_;
    bool keep_alive_ = true;
    bool stream_done_ = false;
    bool draining_ = false;
    int poll_wait_us_ = 0;              // the current idle wait between polls; 0 after a poll that found data
    bool watching_ = false;             // watch_for_disconnect()'s read is outstanding
    bool writing_ = false;              // a write is under way
    bool reading_ = false;              // read_more()'s read is under way
    std::function<void()> close_done_;  // set by close_on_strand() during a write: close at its end, then call it
    std::optional<Reply> ready_;        // a finished non-streaming reply waiting for that read to end
};

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return value;
    return "";
}

bool HttpRequest::has_header(const std::string& lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return true;
    return false;
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
    std::optional<net::ssl::context> tls;  // with --ssl-certfile: every connection is TLS
    bool stopped = false;

    // An I/O thread's loop. Every handler catches what a request can throw; should anything still escape one, it
    // costs that handler's connection (its session is released as the handler unwinds), never the process.
    void run_io() {
        for (;;) {
            try {
                ioc.run();
                return;
            } catch (const std::exception& e) {
                log_warn("server: an I/O handler threw (its connection is dropped): {}", e.what());
            } catch (...) {
                log_warn("server: an I/O handler threw a non-standard exception (its connection is dropped)");
            }
        }
    }

    void close_acceptor() {
        net::post(acceptor.get_executor(), [this] {
            error_code ignored;
            acceptor.close(ignored);
            if (retry_timer) retry_timer->cancel();
        });
    }
    std::vector<std::shared_ptr<SessionBase>> take_sessions() {
        std::vector<std::weak_ptr<SessionBase>> weak;
        {
            std::lock_guard<std::mutex> lock(shared->mutex);
            weak.swap(shared->sessions);
        }
        std::vector<std::shared_ptr<SessionBase>> live;
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
            if (tls)
                std::make_shared<Session<TlsStream>>(shared, std::move(socket), *tls)->start();
            else
                std::make_shared<Session<beast::tcp_stream>>(shared, std::move(socket))->start();
            accept();
        });
    }
};

Status TlsOptions::validate() const {
    if (!enabled()) {
        for (const auto& [flag, value] :
             {std::pair<const char*, const std::string*>{"--ssl-keyfile", &keyfile}, {"--ssl-ca-certs", &ca_certs}})
            if (!value->empty()) return error("{} needs --ssl-certfile (TLS is on only with a certificate)", flag);
        if (cert_reqs != 0) return error("--ssl-cert-reqs {} needs --ssl-certfile", cert_reqs);
        return {};
    }
    if (cert_reqs < 0 || cert_reqs > 2)
        return error("--ssl-cert-reqs must be 0 (CERT_NONE), 1 (CERT_OPTIONAL) or 2 (CERT_REQUIRED), got {}",
                     cert_reqs);
    if (cert_reqs != 0 && ca_certs.empty())
        return error("--ssl-cert-reqs {} checks client certificates: it needs --ssl-ca-certs", cert_reqs);
    return {};
}

namespace {

// The server's TLS context: certificate chain, key, and the client-certificate policy.
Result<net::ssl::context> make_tls_context(const TlsOptions& tls) {
    TACO_RETURN_IF_ERROR(tls.validate());
    net::ssl::context context(net::ssl::context::tls_server);
    context.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                        net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                        net::ssl::context::single_dh_use);
    // An encrypted key would make OpenSSL ask for its passphrase on the terminal: no passphrase, a clear error.
    context.set_password_callback([](size_t, net::ssl::context::password_purpose) { return std::string(); });
    error_code ec;
    context.use_certificate_chain_file(tls.certfile, ec);
    if (ec) return error("--ssl-certfile {}: {}", tls.certfile, ec.message());
    const std::string& keyfile = tls.keyfile.empty() ? tls.certfile : tls.keyfile;
    context.use_private_key_file(keyfile, net::ssl::context::pem, ec);
    if (ec) return error("{} {}: {}", tls.keyfile.empty() ? "--ssl-certfile" : "--ssl-keyfile", keyfile, ec.message());
    if (!tls.ca_certs.empty()) {
        context.load_verify_file(tls.ca_certs, ec);
        if (ec) return error("--ssl-ca-certs {}: {}", tls.ca_certs, ec.message());
    }
    net::ssl::verify_mode mode = net::ssl::verify_none;
    if (tls.cert_reqs == 1) mode = net::ssl::verify_peer;
    if (tls.cert_reqs == 2) mode = net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert;
    context.set_verify_mode(mode, ec);
    if (ec) return error("--ssl-cert-reqs {}: {}", tls.cert_reqs, ec.message());
    return context;
}

}  // namespace

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::create(const HttpServerOptions& options, Handler handler) {
    auto impl = std::make_unique<Impl>();
    impl->shared->handler = std::move(handler);
    impl->shared->options = options;
    if (options.tls.enabled()) {
        TACO_ASSIGN_OR_RETURN(net::ssl::context context, make_tls_context(options.tls));
        impl->tls.emplace(std::move(context));
    } else {
        TACO_RETURN_IF_ERROR(options.tls.validate());
    }
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
    for (int i = 0; i < n; ++i) impl_->threads.emplace_back([this] { impl_->run_io(); });
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
    std::vector<std::shared_ptr<SessionBase>> sessions = impl_->take_sessions();
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
