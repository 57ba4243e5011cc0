// `taco_llm bench serve [--base-url URL | --host H --port P] --concurrency N --num-prompts M --max-tokens K`:
// streaming completions against a running server (ours or any OpenAI-compatible one), with vLLM's
// `bench serve` figures: TTFT and TPOT p50/p99, output tokens/s, failures. Exits 1 when any request failed.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "server/open_file_limit.h"
#include "server/stream_load.h"
#include "tools/cli/command.h"

namespace taco::cli {
namespace {

struct BenchServeArgs {
    server::StreamLoadOptions load;
    std::string base_url;
    std::string output_json;
};

// "http://HOST:PORT" (a trailing path is ignored; https is not spoken).
void parse_base_url(const std::string& url, server::StreamLoadOptions& load) {
    const std::string scheme = "http://";
    if (url.rfind(scheme, 0) != 0) fail(fmt::format("--base-url {}: expected http://HOST:PORT", url));
    std::string rest = url.substr(scheme.size());
    rest = rest.substr(0, rest.find('/'));
    const size_t colon = rest.rfind(':');
    load.host = rest.substr(0, colon);
    if (load.host == "localhost") load.host = "127.0.0.1";
    if (colon == std::string::npos) {
        load.port = 80;
        return;
    }
    try {
        load.port = std::stoi(rest.substr(colon + 1));
    } catch (const std::exception&) {
        fail(fmt::format("--base-url {}: the port is not a number", url));
    }
}

void run_bench_serve(BenchServeArgs& args) {
    if (!args.base_url.empty()) parse_base_url(args.base_url, args.load);
    const int64_t fd_limit = server::raise_open_file_limit();
    if (fd_limit >= 0 && fd_limit < args.load.concurrency + 64)
        std::fprintf(stderr, "warning: the open-file limit (%lld) is below --concurrency; connections may fail\n",
                     static_cast<long long>(fd_limit));
    auto report = server::run_stream_load(args.load);
    if (!report) fail(report.status().message());
    const server::StreamLoadReport& r = *report;
    fmt::print("requests:           {} ok, {} failed ({} without [DONE]) of {}\n", r.num_ok, r.num_failed,
               r.num_without_done, r.num_requests);
    fmt::print("max open at once:   {}\n", r.max_open);
    fmt::print("duration:           {:.2f} s\n", r.duration_s);
    fmt::print("output tokens:      {} ({:.1f} tok/s)\n", r.output_tokens, r.output_tokens_per_s());
    fmt::print("TTFT p50 / p99:     {:.1f} / {:.1f} ms\n", r.ttft_p50_s * 1e3, r.ttft_p99_s * 1e3);
    fmt::print("TPOT p50 / p99:     {:.2f} / {:.2f} ms\n", r.tpot_p50_s * 1e3, r.tpot_p99_s * 1e3);
    fmt::print("E2E  p50 / p99:     {:.1f} / {:.1f} ms\n", r.e2e_p50_s * 1e3, r.e2e_p99_s * 1e3);
    for (const std::string& e : r.errors) fmt::print(stderr, "failure: {}\n", e);
    std::fflush(stdout);
    if (!args.output_json.empty()) {
        std::ofstream out(args.output_json);
        out << r.to_json().dump(2) << "\n";
        if (!out) fail(fmt::format("cannot write {}", args.output_json));
    }
    if (r.num_failed > 0) fail(fmt::format("{} of {} requests failed", r.num_failed, r.num_requests));
}

const CommandRegistrar registrar(40, [](CLI::App& app) {
    CLI::App* bench = bench_subcommand(app);
    auto args = std::make_shared<BenchServeArgs>();
    CLI::App* sub = bench->add_subcommand("serve", "Streaming load against a running OpenAI-compatible server");
    server::StreamLoadOptions& load = args->load;
    sub->add_option("--base-url", args->base_url, "Server URL, http://HOST:PORT (overrides --host/--port)");
    sub->add_option("--host", load.host, "Server address")->capture_default_str();
    sub->add_option("--port", load.port, "Server port")->capture_default_str();
    sub->add_option("--model", load.model, "\"model\" in the requests (default: the server's)");
    sub->add_option("--api-key", load.api_key, "Sent as 'Authorization: Bearer KEY'");
    sub->add_option("--prompt", load.prompt, "Prompt of every request")->capture_default_str();
    sub->add_option("--concurrency,--max-concurrency", load.concurrency, "Requests open at once")
        ->capture_default_str();
    sub->add_option("--num-prompts", load.num_requests, "Requests in all")->capture_default_str();
    sub->add_option("--max-tokens", load.max_tokens, "max_tokens of every request (with ignore_eos)")
        ->capture_default_str();
    sub->add_option("--client-threads", load.num_threads, "Client I/O threads")->capture_default_str();
    sub->add_option("--request-timeout", load.request_timeout_s, "Seconds before a request counts as failed")
        ->capture_default_str();
    sub->add_option("--output-json", args->output_json, "Also write the figures to this JSON file");
    sub->callback([args] { run_bench_serve(*args); });
});

}  // namespace
}  // namespace taco::cli
