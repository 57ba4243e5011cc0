// HTTPS as vLLM serves it under --ssl-certfile / --ssl-keyfile / --ssl-ca-certs / --ssl-cert-reqs (uvicorn's TLS), with
// a self-signed certificate made by the openssl command for each run.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "test_client.h"

namespace taco::server::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kModel = "tests/data/models/llama";

// A folder holding a self-signed certificate for 127.0.0.1 (cert.pem, key.pem), a second, unrelated one
// (other_cert.pem, other_key.pem), and key.pem encrypted with a passphrase (encrypted_key.pem).
struct Certificates {
    fs::path dir;
    bool made = false;

    Certificates() {
        dir = fs::temp_directory_path() / fmt::format("taco_tls_test_{}", ::getpid());
        fs::create_directories(dir);
        made = make("cert", "key") && make("other_cert", "other_key") &&
               std::system(fmt::format("openssl pkey -in '{}' -aes256 -passout pass:secret -out '{}' >/dev/null 2>&1",
                                       path("key"), path("encrypted_key"))
                               .c_str()) == 0;
    }
    ~Certificates() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    std::string path(const std::string& name) const { return (dir / (name + ".pem")).string(); }

private:
    bool make(const std::string& cert, const std::string& key) const {
        const std::string command = fmt::format(
            "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
            "-addext subjectAltName=IP:127.0.0.1 -keyout '{}' -out '{}' >/dev/null 2>&1",
            path(key), path(cert));
        return std::system(command.c_str()) == 0;
    }
};

TEST(ServerTls, ServesHttpsWithTheGivenCertificateAndRefusesPlainHttp) {
    Certificates certs;
    if (!certs.made) GTEST_SKIP() << "the openssl command could not make a certificate";
    TlsOptions tls;
    tls.certfile = certs.path("cert");
    tls.keyfile = certs.path("key");
    ApiServerOptions options;
    options.http.tls = tls;
    TestServer s(kModel, options);
    const TlsClient client{certs.path("cert"), "", ""};
    const HttpResult models = https_call(s.port, client, "GET", "/v1/models", "");
    EXPECT_EQ(models.status, 200) << models.body;
    EXPECT_EQ(models.json()["data"][0]["id"], "test-model");
    // A stream over TLS arrives whole.
    const HttpResult streamed = https_call(s.port, client, "POST", "/v1/completions",
                                           json{{"prompt", {1, 2}}, {"max_tokens", 3}, {"stream", true}}.dump());
    bool done = false;
    EXPECT_EQ(sse_events(streamed.body, &done).size(), 3u) << streamed.body;
    EXPECT_TRUE(done);
    // A client that does not trust the certificate fails its handshake.
    EXPECT_THROW(https_call(s.port, TlsClient{certs.path("other_cert"), "", ""}, "GET", "/health", ""), std::exception);
    // Plain HTTP on the TLS port gets no HTTP reply, and the server goes on.
    bool closed = false;
    const std::string raw = raw_exchange(s.port, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 10, &closed);
    EXPECT_EQ(first_status(raw), 0) << raw;
    EXPECT_TRUE(closed);
    EXPECT_EQ(https_call(s.port, client, "GET", "/health", "").status, 200);
}

namespace beast = boost::beast;
namespace net = boost::asio;

// How a TLS connection ended after a response: `raw_request` sent, its response's status read, `after_response` run
// (it may stop the server), then the connection read until the server ends it. close_notify: the server ended its TLS
// session first (the read ends in a clean EOF); false: the socket closed without it (a truncated stream, as a cut
// connection looks) or nothing came for 10 s (`error` says which).
struct TlsEnd {
    int status = 0;
    bool close_notify = false;
    std::string error;
};
TlsEnd https_until_closed(int port, const std::string& ca_file, const std::string& raw_request,
                          const std::function<void()>& after_response = nullptr) {
    net::io_context ioc;
    net::ssl::context context(net::ssl::context::tls_client);
    context.load_verify_file(ca_file);
    context.set_verify_mode(net::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, context);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
    beast::get_lowest_layer(stream).connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), uint16_t(port)));
    stream.handshake(net::ssl::stream_base::client);
    net::write(stream, net::buffer(raw_request));
    beast::flat_buffer buffer;
    beast::http::response<beast::http::string_body> response;
    beast::http::read(stream, buffer, response);
    TlsEnd end;
    end.status = int(response.result_int());
    if (after_response) after_response();
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    beast::error_code ec;
    char chunk[4096];
    while (!ec) stream.read_some(net::buffer(chunk), ec);
    end.close_notify = ec == net::error::eof;
    end.error = ec.message();
    return end;
}

// Whenever the server ends a TLS connection after a complete reply -- one asked to close it, a refused request, a
// shutdown with the connection idle -- its close_notify comes before the socket closes, so the client's read ends
// cleanly rather than in a truncated stream.
TEST(ServerTls, TheServerEndsItsTlsSessionBeforeClosingTheSocket) {
    Certificates certs;
    if (!certs.made) GTEST_SKIP() << "the openssl command could not make a certificate";
    ApiServerOptions options;
    options.http.tls.certfile = certs.path("cert");
    options.http.tls.keyfile = certs.path("key");
    TestServer s(kModel, options);
    TlsEnd end =
        https_until_closed(s.port, certs.path("cert"), "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(end.status, 200);
    EXPECT_TRUE(end.close_notify) << end.error;
    end = https_until_closed(s.port, certs.path("cert"), "GET /health HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n");
    EXPECT_EQ(end.status, 417);
    EXPECT_TRUE(end.close_notify) << end.error;
    // A keep-alive connection left open: the shutdown ends it.
    end = https_until_closed(s.port, certs.path("cert"), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
                             [&] { s.server->shutdown(1); });
    EXPECT_EQ(end.status, 200);
    EXPECT_TRUE(end.close_notify) << end.error;
}

// A keep-alive connection idle for the idle timeout is ended the same way, and so is a plain one (by closing it).
TEST(ServerTls, AnIdleConnectionEndsWithItsTlsSession) {
    Certificates certs;
    if (!certs.made) GTEST_SKIP() << "the openssl command could not make a certificate";
    ApiServerOptions options;
    options.http.tls.certfile = certs.path("cert");
    options.http.tls.keyfile = certs.path("key");
    options.http.idle_timeout_ms = 300;
    TestServer s(kModel, options);
    const auto start = std::chrono::steady_clock::now();
    const TlsEnd end = https_until_closed(s.port, certs.path("cert"), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(end.status, 200);
    EXPECT_TRUE(end.close_notify) << end.error;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    ApiServerOptions plain_options;
    plain_options.http.idle_timeout_ms = 300;
    TestServer plain(kModel, plain_options);
    HttpConnection connection(plain.port);
    connection.send("GET", "/health", "");
    EXPECT_EQ(connection.receive().status, 200);
    std::string received;
    EXPECT_EQ(connection.read_some(&received, 5), HttpConnection::ReadEnd::kClosed);
}

TEST(ServerTls, CertReqs2RequiresAClientCertificateSignedByTheCaCerts) {
    Certificates certs;
    if (!certs.made) GTEST_SKIP() << "the openssl command could not make a certificate";
    ApiServerOptions options;
    options.http.tls.certfile = certs.path("cert");
    options.http.tls.keyfile = certs.path("key");
    options.http.tls.ca_certs = certs.path("other_cert");  // the only client certificate trusted
    options.http.tls.cert_reqs = 2;
    TestServer s(kModel, options);
    const TlsClient trusted{certs.path("cert"), certs.path("other_cert"), certs.path("other_key")};
    EXPECT_EQ(https_call(s.port, trusted, "GET", "/health", "").status, 200);
    // No client certificate, or one the CA list does not hold: the handshake (or the first read) fails.
    EXPECT_THROW(https_call(s.port, TlsClient{certs.path("cert"), "", ""}, "GET", "/health", ""), std::exception);
    const TlsClient untrusted{certs.path("cert"), certs.path("cert"), certs.path("key")};
    EXPECT_THROW(https_call(s.port, untrusted, "GET", "/health", ""), std::exception);
    EXPECT_EQ(https_call(s.port, trusted, "GET", "/health", "").status, 200);
}

TEST(ServerTls, BadFilesAndSettingsAreErrorsNamingThem) {
    Certificates certs;
    if (!certs.made) GTEST_SKIP() << "the openssl command could not make a certificate";
    auto refused = [](const TlsOptions& tls) -> std::string {
        HttpServerOptions options;
        options.host = "127.0.0.1";
        options.port = 0;
        options.tls = tls;
        auto server = HttpServer::create(options, [](const HttpRequest&) { return HandlerResult{}; });
        return server ? "" : server.status().message();
    };
    TlsOptions tls;
    tls.certfile = certs.path("cert");
    tls.keyfile = certs.path("other_key");  // not the certificate's key
    EXPECT_NE(refused(tls).find("--ssl-keyfile " + certs.path("other_key")), std::string::npos) << refused(tls);
    tls.keyfile = certs.path("encrypted_key");  // refused at once: no passphrase is asked for on the terminal
    EXPECT_NE(refused(tls).find("--ssl-keyfile " + certs.path("encrypted_key")), std::string::npos) << refused(tls);
    tls.keyfile = "";  // the key is not in the certificate file either
    EXPECT_NE(refused(tls).find("--ssl-certfile"), std::string::npos) << refused(tls);
    tls.certfile = certs.path("key");  // not a certificate
    EXPECT_NE(refused(tls).find("--ssl-certfile " + certs.path("key")), std::string::npos) << refused(tls);
    tls = TlsOptions{};
    tls.certfile = certs.path("cert");
    tls.keyfile = certs.path("key");
    tls.cert_reqs = 2;
    EXPECT_NE(refused(tls).find("needs --ssl-ca-certs"), std::string::npos);
    tls.cert_reqs = 3;
    EXPECT_NE(refused(tls).find("--ssl-cert-reqs must be 0"), std::string::npos);
    tls = TlsOptions{};
    tls.keyfile = certs.path("key");
    EXPECT_NE(refused(tls).find("--ssl-keyfile needs --ssl-certfile"), std::string::npos);
    tls.keyfile = "";
    tls.certfile = certs.path("cert");
    tls.keyfile = certs.path("key");
    EXPECT_EQ(refused(tls), "");
}

}  // namespace
}  // namespace taco::server::testing
