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

class ServerMetrics {
public:
    ServerMetrics();

    Histogram time_to_first_token;
    Histogram e2e_request_latency;
    Histogram time_per_output_token;
    std::atomic<int64_t> requests_success{0};
    std::atomic<int64_t> requests_aborted{0};

    // The whole /metrics page: engine gauges and counters, then the server's histograms.
    std::string render(const EngineStats& stats, const std::string& model_name) const;
};

}  // namespace taco::server
