// A blocking HTTP/1.1 client for the server tests (Boost.Beast), plus helpers to start a server in-process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/api_server.h"

namespace taco::server::testing {

struct HttpResult {
    int status = 0;
    std::string body;
    std::string retry_after;
    std::string content_type;
    nlohmann::json json() const { return nlohmann::json::parse(body); }
};

inline HttpResult http_call(int port, const std::string& method, const std::string& target, const std::string& body,
                            const std::string& api_key = "") {
    namespace beast = boost::beast;
    namespace http = beast::http;
    boost::asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), uint16_t(port)));
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    HttpResult out;
    out.status = int(res.result_int());
    out.body = res.body();
    out.retry_after = std::string(res[http::field::retry_after]);
    out.content_type = std::string(res[http::field::content_type]);
    beast::error_code ignored;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    return out;
}

inline HttpResult post(int port, const std::string& target, const nlohmann::json& body, const std::string& key = "") {
    return http_call(port, "POST", target, body.dump(), key);
}

// The JSON events of an SSE body; `done` tells whether it ended with "data: [DONE]".
inline std::vector<nlohmann::json> sse_events(const std::string& body, bool* done) {
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

// An engine and a server on an ephemeral loopback port.
struct TestServer {
    std::unique_ptr<Engine> engine;
    std::unique_ptr<ApiServer> server;
    int port = 0;

    explicit TestServer(const std::string& model_dir, ApiServerOptions options = {}) {
        EngineConfig config;
        config.model_dir = std::string(TACO_SOURCE_DIR) + "/" + model_dir;
        config.num_device_blocks = 256;
        config.max_num_seqs = 16;
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
    ~TestServer() {
        server.reset();
        engine.reset();
    }
};

}  // namespace taco::server::testing
