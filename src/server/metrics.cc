#include "server/metrics.h"

#include <fmt/format.h>

namespace taco::server {

std::string prometheus_label_value(const std::string& value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void Histogram::observe(double value) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    counts_[i]++;
    sum_ += value;
    count_++;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
    }
    cumulative += counts_.back();
    out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, cumulative);
    out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
    out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
}

// Bucket bounds as vLLM's (vllm/v1/metrics/loggers.py).
ServerMetrics::ServerMetrics()
    : time_to_first_token({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      e2e_request_latency({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                           30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}),
      time_per_output_token({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                             20.0, 40.0, 80.0}) {}

std::string ServerMetrics::render(const EngineStats& s, const std::string& model_name) const {
    const std::string labels = fmt::format("model_name=\"{}\"", prometheus_label_value(model_name));
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help, auto value) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{{}}} {}\n", name, help, name, type, name, labels, value);
    };
    metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", s.num_running);
    metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", s.num_waiting);
    metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", s.kv_cache_usage);
    metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", s.prompt_tokens_total);
    metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           s.generation_tokens_total);
    metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in tokens.", s.prefix_queries_tokens);
    metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in tokens.",
           s.prefix_hits_device_tokens + s.prefix_hits_host_tokens);
    metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemptions.", s.num_preemptions);
    out +=
        "# HELP vllm:request_success_total Count of successfully processed requests.\n"
        "# TYPE vllm:request_success_total counter\n";
    out += fmt::format("vllm:request_success_total{{{}}} {}\n", labels, requests_success.load());
    auto histogram = [&](const char* name, const char* help, const Histogram& h) {
        out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
        h.render(name, labels, out);
    };
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", time_to_first_token);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_request_latency);
    histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
              time_per_output_token);
    return out;
}

}  // namespace taco::server
