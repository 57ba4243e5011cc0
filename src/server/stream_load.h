// StreamLoad: a load generator for the OpenAI server: `num_requests` streaming completions, `concurrency` of them
// open at once, each on its own connection, timed the way vLLM's benchmark_serving times them (TTFT: request sent
// -> first token; TPOT: (end - first token) / (output tokens - 1)). A request fails on a connection error, a
// status other than 200, an error event, or a stream that ends without "data: [DONE]". Used by
// `taco_llm bench serve` and by the server load test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace taco::server {

struct StreamLoadOptions {
    std::string host = "127.0.0.1";
    int port = 8000;
    std::string model;  // "" leaves "model" out of the request (the server's default)
    std::string api_key;
    std::string prompt = "Once upon a time";
    int64_t num_requests = 100;
    int64_t concurrency = 100;
    int64_t max_tokens = 16;
    bool ignore_eos = true;  // every request generates max_tokens, so runs compare
    int num_threads = 1;     // client I/O threads
    double request_timeout_s = 600;
};

struct StreamLoadReport {
    int64_t num_requests = 0;
    int64_t num_ok = 0;
    int64_t num_failed = 0;
    int64_t num_without_done = 0;  // streams that ended without "data: [DONE]" (counted in num_failed)
    int64_t max_open = 0;          // most requests open at once
    int64_t output_tokens = 0;
    double duration_s = 0;
    double ttft_p50_s = 0, ttft_p99_s = 0;
    double tpot_p50_s = 0, tpot_p99_s = 0;
    double e2e_p50_s = 0, e2e_p99_s = 0;
    std::vector<std::string> errors;  // the first few failures, for the message

    double output_tokens_per_s() const { return duration_s > 0 ? double(output_tokens) / duration_s : 0; }
    nlohmann::json to_json() const;
};

// Runs the load to the end (every request finished or failed). Fails only on bad options.
Result<StreamLoadReport> run_stream_load(const StreamLoadOptions& options);

}  // namespace taco::server
