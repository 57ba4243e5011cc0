// Server-side metrics in Prometheus text with vLLM's names (vllm:*), so dashboards built for vLLM work.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace taco::server {

// A label value as the Prometheus text exposition format writes it between double quotes: backslash, double quote
// and line feed escaped as \\, \" and \n; every other byte (UTF-8 included) as it is.
std::string prometheus_label_value(const std::string& value);

// A cumulative histogram over fixed bucket bounds (seconds).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
    void observe(double value);
    // Appends the _bucket/_sum/_count lines of metric `name` with the label set `labels` ("model_name=\"m\"").
    void render(const std::string& name, const std::string& labels, std::string& out) const;

private:
    std::vector<double> bounds_;
    mutable std::mutex mutex_;
    std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

// vLLM's 1-2-5 buckets up to `max` (1, 2, 5, 10, 20, 50, ...): token-count histograms.
std::vector<double> one_two_five_buckets(int64_t max);

class ServerMetrics {
public:
    // max_model_len bounds the token-count histograms' buckets, as vLLM's.
    explicit ServerMetrics(int64_t max_model_len = 8192);

    Histogram time_to_first_token;
    Histogram e2e_request_latency;
    Histogram time_per_output_token;
    Histogram inter_token_latency;
    Histogram request_queue_time;      // engine queue -> first scheduled
    Histogram request_prefill_time;    // first scheduled -> first token
    Histogram request_decode_time;     // first token -> finished
    Histogram request_inference_time;  // first scheduled -> finished
    Histogram request_prompt_tokens;
    Histogram request_generation_tokens;
    Histogram request_params_n;
    Histogram request_params_max_tokens;
    std::atomic<int64_t> requests_success{0};  // requests that ended without an error
    std::atomic<int64_t> requests_aborted{0};
    // Finished samples by finish reason (vllm:request_success_total's finished_reason label).
    std::atomic<int64_t> finished_stop{0}, finished_length{0}, finished_abort{0};

    // The whole /metrics page: engine gauges and counters, then the server's histograms.
    std::string render(const EngineStats& stats, const CacheInfo& cache, const std::string& model_name) const;
};

}  // namespace taco::server
