#include "server/download_progress.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace taco::server {
namespace {

constexpr double kMB = 1e6;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);
constexpr int kBarWidth = 24;

}  // namespace

DownloadProgress::DownloadProgress(ProgressStyle style, std::FILE* out) : style_(style), out_(out) {
    if (style_ == ProgressStyle::kAuto) style_ = ::isatty(::fileno(out_)) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

void DownloadProgress::start(const std::string& name, int64_t resumed_bytes, int64_t total_bytes) {
    name_ = name;
    resumed_bytes_ = resumed_bytes;
    total_bytes_ = total_bytes;
    started_ = Clock::now();
    last_draw_ = Clock::time_point{};
    if (style_ == ProgressStyle::kLines && resumed_bytes > 0)
        fmt::print(out_, "resuming {} at {:.1f} MB\n", name_, double(resumed_bytes) / kMB);
    if (style_ == ProgressStyle::kBar) draw(resumed_bytes, false);
}

void DownloadProgress::update(int64_t bytes) {
    if (style_ != ProgressStyle::kBar || Clock::now() - last_draw_ < kRedrawEvery) return;
    draw(bytes, false);
}

void DownloadProgress::finish(int64_t bytes) {
    if (style_ == ProgressStyle::kBar) return draw(bytes, true);
    if (style_ != ProgressStyle::kLines) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    fmt::print(out_, "downloaded {} ({:.1f} MB) in {:.1f} s, {:.1f} MB/s\n", name_, double(bytes) / kMB, seconds,
               double(bytes - resumed_bytes_) / kMB / std::max(seconds, 1e-3));
    std::fflush(out_);
}

void DownloadProgress::draw(int64_t bytes, bool last) {
    last_draw_ = Clock::now();
    const double seconds = std::chrono::duration<double>(last_draw_ - started_).count();
    const double rate = double(bytes - resumed_bytes_) / kMB / std::max(seconds, 1e-3);
    std::string bar;
    std::string total = "?";
    if (total_bytes_ > 0) {
        const int filled = int(std::min<int64_t>(kBarWidth, bytes * kBarWidth / total_bytes_));
        bar = "[" + std::string(size_t(filled), '#') + std::string(size_t(kBarWidth - filled), '.') + "] ";
        total = fmt::format("{:.1f}", double(total_bytes_) / kMB);
    }
    std::string name = name_.size() > 40 ? "..." + name_.substr(name_.size() - 37) : name_;
    fmt::print(out_, "\r{:<40} {}{:.1f}/{} MB {:6.1f} MB/s\x1b[K{}", name, bar, double(bytes) / kMB, total, rate,
               last ? "\n" : "");
    std::fflush(out_);
}

}  // namespace taco::server
