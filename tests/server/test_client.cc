#include "test_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cctype>
#include <stdexcept>

#include <boost/asio.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace taco::server::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

http::request<http::string_body> make_request(const std::string& method, const std::string& target,
                                              const std::string& body, const std::string& api_key) {
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    return req;
}

// One response from a plain or TLS stream.
template <class Stream>
HttpResult read_response(Stream& stream, beast::flat_buffer& buffer) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    HttpResult out;
    out.status = int(res.result_int());
    out.body = res.body();
    out.retry_after = std::string(res[http::field::retry_after]);
    out.content_type = std::string(res[http::field::content_type]);
    for (const auto& field : res) {
        std::string name(field.name_string());
        for (char& c : name) c = char(std::tolower(uint8_t(c)));
        out.headers.emplace_back(name, std::string(field.value()));
    }
    return out;
}

}  // namespace

struct HttpConnection::Impl {
    net::io_context ioc;
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;
};

HttpConnection::HttpConnection(int port) : impl_(std::make_unique<Impl>()) {
    impl_->stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
}

HttpConnection::~HttpConnection() {
    beast::error_code ignored;
    impl_->stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

void HttpConnection::send(const std::string& method, const std::string& target, const std::string& body) {
    http::write(impl_->stream, make_request(method, target, body, ""));
}

bool HttpConnection::send_raw(const std::string& bytes) {
    boost::system::error_code ec;
    net::write(impl_->stream.socket(), net::buffer(bytes), ec);
    return !ec;
}

HttpResult HttpConnection::receive() { return read_response(impl_->stream, impl_->buffer); }

HttpConnection::ReadEnd HttpConnection::read_some(std::string* received, int timeout_s, std::string* error) {
    // Bytes a receive() read ahead come first.
    if (impl_->buffer.size() > 0) {
        received->append(beast::buffers_to_string(impl_->buffer.data()));
        impl_->buffer.consume(impl_->buffer.size());
        return ReadEnd::kData;
    }
    // A receive timeout on the socket itself, so a server that neither sends nor closes ends the read.
    auto& socket = impl_->stream.socket();
    timeval timeout{timeout_s, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    char chunk[4096];
    boost::system::error_code ec;
    const size_t n = socket.read_some(net::buffer(chunk), ec);
    received->append(chunk, n);
    if (!ec) return ReadEnd::kData;
    if (error) *error = ec.message();
    const bool timed_out = ec == net::error::would_block || ec == net::error::try_again || ec == net::error::timed_out;
    return timed_out ? ReadEnd::kTimedOut : ReadEnd::kClosed;
}

HttpResult http_call(int port, const std::string& method, const std::string& target, const std::string& body,
                     const std::string& api_key) {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
    http::write(stream, make_request(method, target, body, api_key));
    beast::flat_buffer buffer;
    HttpResult out = read_response(stream, buffer);
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    return out;
}

HttpResult http_call_with(int port, const std::string& method, const std::string& target, const std::string& body,
                          const std::vector<std::pair<std::string, std::string>>& fields) {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
    auto request = make_request(method, target, body, "");
    for (const auto& [name, value] : fields) request.set(name, value);
    http::write(stream, request);
    beast::flat_buffer buffer;
    HttpResult out = read_response(stream, buffer);
    beast::error_code ignored;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    return out;
}

HttpResult https_call(int port, const TlsClient& tls, const std::string& method, const std::string& target,
                      const std::string& body) {
    net::io_context ioc;
    net::ssl::context context(net::ssl::context::tls_client);
    context.load_verify_file(tls.ca_file);
    context.set_verify_mode(net::ssl::verify_peer);
    context.set_verify_callback(net::ssl::host_name_verification("127.0.0.1"));
    if (!tls.cert_file.empty()) {
        context.use_certificate_chain_file(tls.cert_file);
        context.use_private_key_file(tls.key_file, net::ssl::context::pem);
    }
    beast::ssl_stream<beast::tcp_stream> stream(ioc, context);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
    beast::get_lowest_layer(stream).connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
    stream.handshake(net::ssl::stream_base::client);
    http::write(stream, make_request(method, target, body, ""));
    beast::flat_buffer buffer;
    HttpResult out = read_response(stream, buffer);
    beast::error_code ignored;
    stream.shutdown(ignored);  // the server may close first: either way the exchange is over
    return out;
}

std::string HttpResult::header(const std::string& lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return value;
    return "";
}

bool HttpResult::has_header(const std::string& lower_name) const {
    for (const auto& [name, value] : headers)
        if (name == lower_name) return true;
    return false;
}

int first_status(const std::string& raw) {
    if (raw.rfind("HTTP/1.1 ", 0) != 0 || raw.size() < 12) return 0;
    return std::stoi(raw.substr(9, 3));
}

std::string raw_exchange(int port, const std::string& bytes, int timeout_s, bool* closed) {
    net::io_context ioc;
    net::ip::tcp::socket socket(ioc);
    socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
    boost::system::error_code ec;
    net::write(socket, net::buffer(bytes), ec);  // a server that refuses early may close first: read what came
    std::string received;
    if (closed) *closed = false;
    for (;;) {
        // poll() bounds the wait: a blocking read with SO_RCVTIMEO is retried by Asio and would wait on.
        pollfd fd{socket.native_handle(), POLLIN, 0};
        if (::poll(&fd, 1, timeout_s * 1000) <= 0) break;  // silent for timeout_s
        char chunk[65536];
        const size_t n = socket.read_some(net::buffer(chunk), ec);
        received.append(chunk, n);
        if (ec) {
            if (closed) *closed = true;
            break;
        }
    }
    socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
    return received;
}

std::vector<nlohmann::json> sse_events(const std::string& body, bool* done) {
    std::vector<nlohmann::json> events;
    *done = false;
    size_t pos = 0;
    while (pos < body.size()) {
        size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) end = body.size();
        std::string event = body.substr(pos, end - pos);
        pos = end + 2;
        if (event.rfind("data: ", 0) != 0) continue;
        std::string data = event.substr(6);
        if (data == "[DONE]") {
            *done = true;
            continue;
        }
        events.push_back(nlohmann::json::parse(data));
    }
    return events;
}

int unused_loopback_port() {
    net::io_context ioc;
    net::ip::tcp::acceptor probe(ioc, {net::ip::make_address("127.0.0.1"), 0});
    return probe.local_endpoint().port();
}

TestServer::TestServer(const std::string& model_dir, ApiServerOptions options,
                       const std::function<void(EngineConfig&)>& configure) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = std::string(TACO_SOURCE_DIR) + "/" + model_dir;
    config.num_device_blocks = 256;
    config.max_num_seqs = 16;
    if (configure) configure(config);
    auto created = Engine::create(config);
    if (!created) throw std::runtime_error(created.status().message());
    engine = std::move(*created);
    options.model_dir = config.model_dir;
    if (options.served_model_names.empty()) options.served_model_names = {"test-model"};
    options.log_requests = false;
    options.http.host = "127.0.0.1";
    options.http.port = 0;
    auto made = ApiServer::create(engine.get(), options);
    if (!made) throw std::runtime_error(made.status().message());
    server = std::move(*made);
    server->start();
    port = server->port();
}

TestServer::~TestServer() {
    server.reset();
    engine.reset();
}

}  // namespace taco::server::testing
