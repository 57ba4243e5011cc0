#include "server/stream_load.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace taco::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr size_t kMaxErrors = 8;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Sample {
    double ttft_s = 0, e2e_s = 0;
    int64_t output_tokens = 0;
};

double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const double rank = p * double(values.size() - 1);
    const size_t lo = size_t(rank);
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (rank - double(lo));
}

// What every client shares: the request to send, the next request index, and the results.
struct Run {
    Run(const StreamLoadOptions& o, tcp::endpoint e) : options(o), endpoint(e) {}
    const StreamLoadOptions& options;
    tcp::endpoint endpoint;
    std::string request;
    std::atomic<int64_t> next{0};
    std::mutex mutex;  // guards the fields below
    std::vector<Sample> samples;
    StreamLoadReport report;
    int64_t open = 0;
};

// One request on its own connection; when it ends the client starts the next request, if any is left.
class Client : public std::enable_shared_from_this<Client> {
public:
    Client(net::io_context& ioc, Run& run) : ioc_(ioc), run_(run), stream_(net::make_strand(ioc)) {}

    void start() {
        if (run_.next.fetch_add(1) >= run_.options.num_requests) return;
        sent_ = Clock::now();
        {
            std::lock_guard<std::mutex> lock(run_.mutex);
            run_.report.max_open = std::max(run_.report.max_open, ++run_.open);
        }
        stream_.expires_after(
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(run_.options.request_timeout_s)));
        stream_.async_connect(run_.endpoint, [self = shared_from_this()](beast::error_code ec) {
            if (ec) return self->finish("connect: " + ec.message());
            net::async_write(self->stream_, net::buffer(self->run_.request), [self](beast::error_code ec, size_t) {
                if (ec) return self->finish("send: " + ec.message());
                self->read_header();
            });
        });
    }

private:
    void read_header() {
        parser_.body_limit(boost::none);
        on_chunk_ = [this](uint64_t, beast::string_view body, beast::error_code&) {
            on_sse(body);
            return body.size();
        };
        parser_.on_chunk_body(on_chunk_);
        http::async_read_header(stream_, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec) return self->finish("read: " + ec.message());
            self->read_body();  // an error status too: its body is the message
        });
    }

    void read_body() {
        if (parser_.is_done()) return end_of_response();
        http::async_read_some(stream_, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec) return self->finish("read: " + ec.message());
            self->read_body();
        });
    }

    void end_of_response() {
        const unsigned status = parser_.get().result_int();
        if (status != 200) return finish(fmt::format("HTTP {}: {}", status, parser_.get().body().substr(0, 300)));
        if (!error_.empty()) return finish(error_);
        if (!done_) return finish("the stream ended without data: [DONE]", true);
        finish("");
    }

    // SSE events arrive in chunks that need not align with events.
    void on_sse(beast::string_view data) {
        sse_.append(data.data(), data.size());
        size_t end;
        while ((end = sse_.find("\n\n")) != std::string::npos) {
            const std::string event = sse_.substr(0, end);
            sse_.erase(0, end + 2);
            if (event.rfind("data: ", 0) != 0) continue;
            const std::string payload = event.substr(6);
            if (payload == "[DONE]") {
                done_ = true;
                continue;
            }
            json chunk = json::parse(payload, nullptr, false);
            if (chunk.is_discarded()) {
                error_ = "an event that is not JSON: " + payload.substr(0, 200);
                continue;
            }
            if (chunk.contains("error")) error_ = "error event: " + chunk["error"].dump().substr(0, 300);
            if (chunk.contains("usage") && chunk["usage"].is_object())
                usage_tokens_ = chunk["usage"].value("completion_tokens", int64_t(-1));
            const json& choices = chunk.contains("choices") ? chunk["choices"] : json();
            if (!choices.is_array() || choices.empty()) continue;
            const json& choice = choices[0];
            const bool token = (choice.contains("text") && choice["text"].is_string()) ||
                               (choice.contains("delta") && choice["delta"].contains("content"));
            if (!token) continue;
            if (!first_token_) first_token_ = Clock::now();
            ++num_token_events_;
        }
    }

    void finish(const std::string& error, bool without_done = false) {
        const auto now = Clock::now();
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream_.close();
        {
            std::lock_guard<std::mutex> lock(run_.mutex);
            --run_.open;
            if (error.empty()) {
                Sample s;
                s.e2e_s = seconds(now - sent_);
                s.ttft_s = first_token_ ? seconds(*first_token_ - sent_) : s.e2e_s;
                s.output_tokens = usage_tokens_ >= 0 ? usage_tokens_ : num_token_events_;
                run_.samples.push_back(s);
            } else {
                run_.report.num_failed++;
                run_.report.num_without_done += without_done ? 1 : 0;
                if (run_.report.errors.size() < kMaxErrors) run_.report.errors.push_back(error);
            }
        }
        auto next = std::make_shared<Client>(ioc_, run_);
        net::post(ioc_, [next] { next->start(); });
    }

    net::io_context& ioc_;
    Run& run_;
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::function<size_t(uint64_t, beast::string_view, beast::error_code&)> on_chunk_;
    http::response_parser<http::string_body> parser_;
    Clock::time_point sent_;
    std::optional<Clock::time_point> first_token_;
    std::string sse_;
    std::string error_;
    bool done_ = false;
    int64_t num_token_events_ = 0;
    int64_t usage_tokens_ = -1;
};

}  // namespace

json StreamLoadReport::to_json() const {
    return json{{"num_requests", num_requests},
                {"num_ok", num_ok},
                {"num_failed", num_failed},
                {"num_without_done", num_without_done},
                {"max_open", max_open},
                {"output_tokens", output_tokens},
                {"duration_s", duration_s},
                {"output_tokens_per_s", output_tokens_per_s()},
                {"ttft_p50_ms", ttft_p50_s * 1e3},
                {"ttft_p99_ms", ttft_p99_s * 1e3},
                {"tpot_p50_ms", tpot_p50_s * 1e3},
                {"tpot_p99_ms", tpot_p99_s * 1e3},
                {"e2e_p50_ms", e2e_p50_s * 1e3},
                {"e2e_p99_ms", e2e_p99_s * 1e3},
                {"errors", errors}};
}

Result<StreamLoadReport> run_stream_load(const StreamLoadOptions& options) {
    if (options.num_requests < 1) return error("--num-prompts must be at least 1");
    if (options.concurrency < 1) return error("--concurrency must be at least 1");
    if (options.max_tokens < 1) return error("--max-tokens must be at least 1");
    beast::error_code ec;
    const auto address = net::ip::make_address(options.host, ec);
    if (ec) return error("'{}' is not an IP address", options.host);
    Run run(options, tcp::endpoint(address, uint16_t(options.port)));
    json body = {{"prompt", options.prompt}, {"max_tokens", options.max_tokens},
                 {"stream", true},           {"stream_options", {{"include_usage", true}}},
                 {"temperature", 0},         {"ignore_eos", options.ignore_eos}};
    if (!options.model.empty()) body["model"] = options.model;
    const std::string text = body.dump();
    run.request = fmt::format("POST /v1/completions HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n",
                              options.host, options.port);
    if (!options.api_key.empty()) run.request += "Authorization: Bearer " + options.api_key + "\r\n";
    run.request += fmt::format("Content-Length: {}\r\nConnection: close\r\n\r\n{}", text.size(), text);

    net::io_context ioc;
    const auto started = Clock::now();
    for (int64_t i = 0; i < std::min(options.concurrency, options.num_requests); ++i)
        std::make_shared<Client>(ioc, run)->start();
    std::vector<std::thread> threads;
    for (int i = 1; i < std::max(1, options.num_threads); ++i) threads.emplace_back([&] { ioc.run(); });
    ioc.run();
    for (auto& t : threads) t.join();

    StreamLoadReport report = std::move(run.report);
    report.duration_s = seconds(Clock::now() - started);
    report.num_requests = options.num_requests;
    report.num_ok = int64_t(run.samples.size());
    std::vector<double> ttft, tpot, e2e;
    for (const Sample& s : run.samples) {
        report.output_tokens += s.output_tokens;
        ttft.push_back(s.ttft_s);
        e2e.push_back(s.e2e_s);
        if (s.output_tokens > 1) tpot.push_back((s.e2e_s - s.ttft_s) / double(s.output_tokens - 1));
    }
    report.ttft_p50_s = percentile(ttft, 0.5);
    report.ttft_p99_s = percentile(ttft, 0.99);
    report.tpot_p50_s = percentile(tpot, 0.5);
    report.tpot_p99_s = percentile(tpot, 0.99);
    report.e2e_p50_s = percentile(e2e, 0.5);
    report.e2e_p99_s = percentile(e2e, 0.99);
    return report;
}

}  // namespace taco::server
