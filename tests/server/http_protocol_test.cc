// HTTP/1.1 as RFC 9112 wants it, written as a hostile client would: oversized trailers, headers and chunk
// extensions, smuggling-shaped framing, HEAD, Expect, Host and Content-Type. Every refusal is a clean 4xx/5xx on
// that connection alone, and the server goes on serving.
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server/http_server.h"
#include "server/metrics.h"
#include "server/request_json.h"
#include "test_client.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;

constexpr const char* kModel = "tests/data/models/llama";

size_t count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) n++;
    return n;
}

std::string chunked_post(const std::string& target, const std::string& after_body, const std::string& extra = "") {
    const std::string body = R"({"prompt":[1,2],"max_tokens":1})";
    return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
           "Transfer-Encoding: chunked\r\n\r\n" + fmt::format("{:x}\r\n{}\r\n", body.size(), body) + after_body;
}

void expect_alive(int port) { EXPECT_EQ(http_call(port, "GET", "/health", "").status, 200); }

TEST(ServerHttp, ChunkedBodyWithAHugeTrailerFieldGets431AndTheServerLives) {
    TestServer s(kModel);
    // The issue's crash: one trailer field of 64 KiB and more (Beast throws past 65533 bytes for a field).
    for (size_t size : {size_t(64 * 1024), size_t(70000), size_t(1 << 20)}) {
        bool closed = false;
        const std::string raw = raw_exchange(
            s.port, chunked_post("/v1/completions", "0\r\nX-Big: " + std::string(size, 'a') + "\r\n\r\n"), 10, &closed);
        EXPECT_EQ(first_status(raw), 431) << raw.substr(0, 200);
        EXPECT_NE(raw.find("trailer"), std::string::npos) << raw.substr(0, 400);
        EXPECT_TRUE(closed);
        expect_alive(s.port);
    }
    // Many small trailer fields add up the same way.
    std::string trailer = "0\r\n";
    for (int i = 0; i < 2000; ++i) trailer += fmt::format("X-T{}: value\r\n", i);
    EXPECT_EQ(first_status(raw_exchange(s.port, chunked_post("/v1/completions", trailer + "\r\n"))), 431);
    expect_alive(s.port);
}

TEST(ServerHttp, SmallTrailerIsAcceptedButNeverJoinsTheHeaders) {
    ApiServerOptions options;
    options.api_keys = {"sekret"};
    TestServer s(kModel, options);
    // A trailer is read and dropped: an Authorization field in it authenticates nothing.
    const std::string raw = raw_exchange(
        s.port, chunked_post("/v1/completions", "0\r\nAuthorization: Bearer sekret\r\n\r\n", "Connection: close\r\n"));
    EXPECT_EQ(first_status(raw), 401) << raw;
    const std::string ok = raw_exchange(s.port, chunked_post("/v1/completions", "0\r\nX-Checksum: 1234\r\n\r\n",
                                                             "Authorization: Bearer sekret\r\nConnection: close\r\n"));
    EXPECT_EQ(first_status(ok), 200) << ok;
}

TEST(ServerHttp, OversizedChunkExtensionAndHeaderAreRefused) {
    TestServer s(kModel);
    const std::string extension = ";ext=" + std::string(100000, 'e');
    // On a data chunk, arriving in pieces (buffered) or whole (seen by the parser's chunk callback).
    std::string request =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
        "chunked\r\n\r\n"
        "2" +
        extension + "\r\n{}\r\n0\r\n\r\n";
    EXPECT_EQ(first_status(raw_exchange(s.port, request)), 400);
    request =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: "
        "chunked\r\n\r\n2;e=" +
        std::string(5000, 'e') + "\r\n{}\r\n0\r\n\r\n";
    const std::string raw = raw_exchange(s.port, request);
    EXPECT_EQ(first_status(raw), 400) << raw.substr(0, 300);
    EXPECT_NE(raw.find("chunk"), std::string::npos) << raw.substr(0, 300);
    // On the last chunk.
    EXPECT_EQ(first_status(raw_exchange(s.port, chunked_post("/v1/completions", "0" + extension + "\r\n\r\n"))), 400);
    // A header section over the limit, as one huge field and as many fields.
    const std::string big = "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(200000, 'h') + "\r\n\r\n";
    EXPECT_EQ(first_status(raw_exchange(s.port, big)), 431);
    std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 10000; ++i) many += fmt::format("X-H{}: v\r\n", i);
    EXPECT_EQ(first_status(raw_exchange(s.port, many + "\r\n")), 431);
    expect_alive(s.port);
}

TEST(ServerHttp, HeadResponsesCarryNoBodySoTheNextResponseParses) {
    TestServer s(kModel);
    const std::string raw = raw_exchange(s.port,
                                         "HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                                         "HEAD /no/such/route HTTP/1.1\r\nHost: x\r\n\r\n"
                                         "GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(count(raw, "HTTP/1.1 "), 3u) << raw;
    const size_t second = raw.find("HTTP/1.1 ", 1);
    const size_t third = raw.find("HTTP/1.1 ", second + 1);
    const std::string head_models = raw.substr(0, second);
    const std::string head_missing = raw.substr(second, third - second);
    // Each HEAD response is a header section alone, ending in the blank line; its Content-Length is what GET sends.
    EXPECT_EQ(first_status(head_models), 405) << head_models;  // /v1/models is GET only, as in vLLM
    EXPECT_EQ(head_models.size(), head_models.find("\r\n\r\n") + 4) << head_models;
    EXPECT_NE(head_models.find("Content-Length: "), std::string::npos);
    EXPECT_EQ(first_status(head_missing), 404);
    EXPECT_EQ(head_missing.size(), head_missing.find("\r\n\r\n") + 4) << head_missing;
    EXPECT_EQ(first_status(raw.substr(third)), 200);
    EXPECT_NE(raw.find(R"({"version")", third), std::string::npos) << raw;
}

TEST(ServerHttp, UnsupportedTransferCodingGets501AndTheBytesAfterItAreNeverServed) {
    TestServer s(kModel);
    const std::string smuggled = "GET /version HTTP/1.1\r\nHost: x\r\n\r\n";
    for (const std::string coding : {"gzip", "gzip, chunked", "identity", "chunked;q=1, br"}) {
        bool closed = false;
        const std::string raw = raw_exchange(
            s.port,
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: " +
                coding + "\r\n\r\n" + smuggled,
            10, &closed);
        EXPECT_EQ(first_status(raw), 501) << coding << ": " << raw;
        EXPECT_NE(raw.find("Connection: close"), std::string::npos) << raw;
        EXPECT_EQ(count(raw, "HTTP/1.1 "), 1u) << raw;
        EXPECT_EQ(raw.find("version"), std::string::npos) << raw;
        EXPECT_TRUE(closed);
    }
    // An HTTP/1.0 request has no transfer codings (RFC 9112 6.1): its framing is faulty.
    EXPECT_EQ(first_status(raw_exchange(
                  s.port, "POST /tokenize HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled)),
              400);
    // chunked twice is malformed rather than unsupported.
    EXPECT_EQ(
        first_status(raw_exchange(
            s.port, "POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n")),
        400);
}

TEST(ServerHttp, ContentLengthWithTransferEncodingGets400AndClose) {
    TestServer s(kModel);
    const std::string smuggled = "GET /version HTTP/1.1\r\nHost: x\r\n\r\n";
    for (const std::string framing :
         {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
          "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n"}) {
        bool closed = false;
        const std::string raw = raw_exchange(
            s.port, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n0\r\n\r\n" + smuggled, 10, &closed);
        EXPECT_EQ(first_status(raw), 400) << framing << raw;
        EXPECT_NE(raw.find("Connection: close"), std::string::npos) << raw;
        EXPECT_EQ(count(raw, "HTTP/1.1 "), 1u) << raw;
        EXPECT_TRUE(closed);
    }
}

TEST(ServerHttp, ExpectContinueIsAnsweredBeforeTheBodyAndAnOverLimitBodyIsRefusedUnread) {
    ApiServerOptions options;
    options.http.limits.body_bytes = 1000;
    TestServer s(kModel, options);
    const std::string body = R"({"prompt":[1,2],"max_tokens":1})";
    {
        HttpConnection connection(s.port);
        connection.send_raw(fmt::format(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
            "Expect: 100-continue\r\n\r\n",
            body.size()));
        std::string interim;
        ASSERT_EQ(connection.read_some(&interim, 5), HttpConnection::ReadEnd::kData);
        EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
        connection.send_raw(body);
        HttpResult res = connection.receive();
        EXPECT_EQ(res.status, 200) << res.body;
    }
    {
        // 5000 bytes declared, none sent: the 413 comes at once, and no 100 Continue before it.
        HttpConnection connection(s.port);
        connection.send_raw(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n"
            "Expect: 100-continue\r\n\r\n");
        std::string raw;
        while (connection.read_some(&raw, 5) == HttpConnection::ReadEnd::kData) {
        }
        EXPECT_EQ(first_status(raw), 413) << raw;
        EXPECT_EQ(raw.find("100 Continue"), std::string::npos) << raw;
    }
    EXPECT_EQ(
        first_status(raw_exchange(
            s.port, "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: something-else\r\n\r\n{}")),
        417);
    expect_alive(s.port);
}

TEST(ServerHttp, MissingOrRepeatedHostGets400) {
    TestServer s(kModel);
    EXPECT_EQ(first_status(raw_exchange(s.port, "GET /health HTTP/1.1\r\n\r\n")), 400);
    const std::string raw = raw_exchange(s.port, "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    EXPECT_EQ(first_status(raw), 400);
    EXPECT_NE(raw.find("Host"), std::string::npos) << raw;
    // HTTP/1.0 needs no Host, but two are still refused.
    EXPECT_EQ(first_status(raw_exchange(s.port, "GET /health HTTP/1.0\r\n\r\n")), 200);
    EXPECT_EQ(first_status(raw_exchange(s.port, "GET /health HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n")), 400);
    EXPECT_EQ(first_status(raw_exchange(s.port, "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")), 200);
}

std::string post_with_type(const std::string& target, const std::string& content_type_line, const std::string& body) {
    return fmt::format("POST {} HTTP/1.1\r\nHost: x\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n{}", target,
                       content_type_line, body.size(), body);
}

TEST(ServerHttp, JsonEndpointsRefuseANonJsonContentTypeWith415AsVllm) {
    TestServer s(kModel);
    const std::string body = R"({"prompt":[1,2],"max_tokens":1})";
    for (const std::string target : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
        for (const std::string type :
             {"Content-Type: text/plain\r\n", "Content-Type: application/x-www-form-urlencoded\r\n", "",
              "Content-Type: application/jsonx\r\n"}) {
            const std::string raw = raw_exchange(s.port, post_with_type(target, type, body));
            EXPECT_EQ(first_status(raw), 415) << target << " " << type << raw;
            EXPECT_NE(raw.find("application/json"), std::string::npos) << raw;
        }
    }
    EXPECT_EQ(s.engine->stats().prompt_tokens_total, 0);  // nothing refused reached the engine
    for (const std::string type :
         {"Content-Type: application/json; charset=utf-8\r\n", "Content-Type: Application/JSON\r\n",
          "Content-Type:  application/json ;charset=UTF-8\r\n"}) {
        const std::string raw = raw_exchange(s.port, post_with_type("/v1/completions", type, body));
        EXPECT_EQ(first_status(raw), 200) << type << raw;
    }
    // A method error comes first, and GET endpoints need no Content-Type.
    EXPECT_EQ(
        first_status(raw_exchange(s.port, "GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")),
        405);
    EXPECT_EQ(first_status(raw_exchange(s.port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")),
              200);
}

TEST(ServerHttp, PrometheusLabelValuesAreEscaped) {
    EXPECT_EQ(prometheus_label_value("plain/model-1"), "plain/model-1");
    EXPECT_EQ(prometheus_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    ApiServerOptions options;
    options.served_model_names = {"my \"quoted\"\\model\nx"};
    TestServer s(kModel, options);
    HttpResult metrics = http_call(s.port, "GET", "/metrics", "");
    ASSERT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.body.find("vllm:num_requests_running{model_name=\"my \\\"quoted\\\"\\\\model\\nx\"} 0"),
              std::string::npos)
        << metrics.body;
    // Every sample line still has its value after the closing brace: no raw quote or newline broke a label.
    for (size_t pos = 0; pos < metrics.body.size();) {
        const size_t end = metrics.body.find('\n', pos);
        const std::string line = metrics.body.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line[0] == '#') continue;
        EXPECT_EQ(line.rfind("vllm:", 0), 0u) << line;
        EXPECT_NE(line.find("} "), std::string::npos) << line;
    }
}

TEST(ServerHttp, NumbersBeyondDoubleRangeGet400NamingTheField) {
    ApiError error;
    EXPECT_FALSE(parse_request_json(R"({"prompt":"hi","max_tokens":1e400})", error));
    EXPECT_EQ(error.status, 400);
    EXPECT_EQ(error.param, "max_tokens");
    EXPECT_NE(error.message.find("'max_tokens'"), std::string::npos) << error.message;
    EXPECT_FALSE(parse_request_json(R"({"logit_bias":{"5":1,"50256":-1e999}})", error));
    EXPECT_EQ(error.param, "logit_bias.50256");
    EXPECT_FALSE(parse_request_json(R"({"prompt":[1,[2,3],{"a":1},)" + std::string(400, '9') + "]}", error));
    EXPECT_EQ(error.param, "prompt[3]");
    EXPECT_FALSE(parse_request_json(R"({"messages":[{"role":"user","content":"x"},{"n":-1e400}]})", error));
    EXPECT_EQ(error.param, "messages[1].n");
    EXPECT_FALSE(parse_request_json("1e400", error));
    EXPECT_EQ(error.param, "");
    EXPECT_NE(error.message.find("the request body"), std::string::npos);
    auto fine = parse_request_json(R"({"temperature":1e300,"prompt":[1,2]})", error);
    ASSERT_TRUE(fine);
    EXPECT_EQ((*fine)["temperature"].get<double>(), 1e300);

    TestServer s(kModel);
    HttpResult res = http_call(s.port, "POST", "/v1/completions", R"({"prompt":[1,2],"max_tokens":1e400})");
    EXPECT_EQ(res.status, 400) << res.body;
    EXPECT_EQ(res.json()["error"]["param"], "max_tokens") << res.body;
    res = http_call(s.port, "POST", "/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":"hi"}],"temperature":-1e309})");
    EXPECT_EQ(res.status, 400) << res.body;
    EXPECT_EQ(res.json()["error"]["param"], "temperature") << res.body;
}

TEST(ServerHttp, PipelinedRequestsAfterAChunkedBodyAreServedInOrder) {
    TestServer s(kModel);
    const std::string raw = raw_exchange(s.port, chunked_post("/v1/completions", "0\r\nX-T: 1\r\n\r\n") +
                                                     "GET /version HTTP/1.1\r\nHost: x\r\n\r\n" +
                                                     "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(count(raw, "HTTP/1.1 200 OK"), 3u) << raw;
    EXPECT_NE(raw.find("\"version\""), std::string::npos) << raw;
}

// A pending reply that fails the way a bug would: poll() throws (non-streaming or streaming) after `polls` calls.
class ThrowingReply : public PendingReply {
public:
    explicit ThrowingReply(bool streaming) : streaming_(streaming) {}
    bool streaming() const override { return streaming_; }
    bool poll(std::string& out) override {
        if (polls_++ == 0 && streaming_) {
            out = "data: first\n\n";
            return false;
        }
        throw std::runtime_error("poll failed");
    }
    Reply take_reply() override { return {}; }
    void cancel() override {}

private:
    bool streaming_;
    int polls_ = 0;
};

TEST(ServerHttp, AThrowingHandlerOrPendingReplyFailsItsOwnRequestOnly) {
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto server = HttpServer::create(options, [](const HttpRequest& request) -> HandlerResult {
        if (request.target == "/throw") throw std::runtime_error("handler failed");
        if (request.target == "/throw-int") throw 42;
        if (request.target == "/pending") return {{}, std::make_shared<ThrowingReply>(false)};
        if (request.target == "/stream") return {{}, std::make_shared<ThrowingReply>(true)};
        return {Reply{200, "text/plain", "fine", {}}, nullptr};
    });
    ASSERT_TRUE(server.is_ok()) << server.status().message();
    (*server)->start();
    const int port = (*server)->port();
    EXPECT_EQ(http_call(port, "GET", "/throw", "").status, 500);
    EXPECT_EQ(http_call(port, "GET", "/throw-int", "").status, 500);
    EXPECT_EQ(http_call(port, "GET", "/pending", "").status, 500);
    // A stream that fails after its status line can only end: the connection closes after what was sent.
    const std::string raw = raw_exchange(port, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(first_status(raw), 200) << raw;
    EXPECT_NE(raw.find("data: first"), std::string::npos) << raw;
    EXPECT_EQ(raw.find("0\r\n\r\n"), std::string::npos) << raw;  // no clean end of the chunked body
    EXPECT_EQ(http_call(port, "GET", "/other", "").body, "fine");
    (*server)->stop();
}

}  // namespace
}  // namespace taco::server::testing
