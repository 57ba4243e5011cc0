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

std::vector<double> one_two_five_buckets(int64_t max) {
    std::vector<double> out;
    for (int64_t exponent = 1;; exponent *= 10) {
        for (int64_t m : {1, 2, 5}) {
            if (m * exponent > max) return out;
            out.push_back(double(m * exponent));
        }
    }
}

namespace {

// Bucket bounds as vLLM's (vllm/v1/metrics/loggers.py).
const std::vector<double> kRequestLatency = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kTokenLatency = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                           0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};

}  // namespace

ServerMetrics::ServerMetrics(int64_t max_model_len)
    : time_to_first_token({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      e2e_request_latency(kRequestLatency),
      time_per_output_token(kTokenLatency),
      inter_token_latency(kTokenLatency),
      request_queue_time(kRequestLatency),
      request_prefill_time(kRequestLatency),
      request_decode_time(kRequestLatency),
      request_inference_time(kRequestLatency),
      request_prompt_tokens(one_two_five_buckets(max_model_len)),
      request_generation_tokens(one_two_five_buckets(max_model_len)),
      request_params_n({1, 2, 5, 10, 20}),
      request_params_max_tokens(one_two_five_buckets(max_model_len)) {}

std::string ServerMetrics::render(const EngineStats& s, const CacheInfo& cache, const std::string& model_name) const {
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
    const std::pair<const char*, int64_t> reasons[] = {{"stop", finished_stop.load()},
                                                       {"length", finished_length.load()},
                                                       {"abort", finished_abort.load() + requests_aborted.load()}};
    for (const auto& [reason, count] : reasons)
        out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels, reason, count);
    // The KV cache's configuration as labels of a constant gauge (vLLM's info metric).
    out += fmt::format(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"
        "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"{}\",enable_prefix_caching=\"{}\","
        "gpu_memory_utilization=\"{}\",num_cpu_blocks=\"{}\",num_gpu_blocks=\"{}\"}} 1.0\n",
        cache.block_size, prometheus_label_value(cache.cache_dtype), cache.enable_prefix_caching ? "True" : "False",
        cache.gpu_memory_utilization, cache.num_host_blocks, cache.num_device_blocks);
    // Tokens per engine step, from the engine's own buckets.
    out +=
        "# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.\n"
        "# TYPE vllm:iteration_tokens_total histogram\n";
    int64_t cumulative = 0;
    for (size_t i = 0; i < kIterationTokenBounds.size(); ++i) {
        cumulative += s.iteration_tokens_buckets[i];
        out += fmt::format("vllm:iteration_tokens_total_bucket{{{},le=\"{}.0\"}} {}\n", labels,
                           kIterationTokenBounds[i], cumulative);
    }
    cumulative += s.iteration_tokens_buckets.back();
    out += fmt::format("vllm:iteration_tokens_total_bucket{{{},le=\"+Inf\"}} {}\n", labels, cumulative);
    out += fmt::format("vllm:iteration_tokens_total_sum{{{}}} {}\n", labels, s.iteration_tokens_sum);
    out += fmt::format("vllm:iteration_tokens_total_count{{{}}} {}\n", labels, cumulative);
    auto histogram = [&](const char* name, const char* help, const Histogram& h) {
        out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
        h.render(name, labels, out);
    };
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", time_to_first_token);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_request_latency);
    histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
              time_per_output_token);
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", inter_token_latency);
    histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
              request_queue_time);
    histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
              request_prefill_time);
    histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
              request_decode_time);
    histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
              request_inference_time);
    histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", request_prompt_tokens);
    histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", request_generation_tokens);
    histogram("vllm:request_params_n", "Histogram of the n request parameter.", request_params_n);
    histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
              request_params_max_tokens);
    return out;
}

}  // namespace taco::server
