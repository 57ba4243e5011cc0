// DownloadProgress: what the hub downloader shows on stderr. On a terminal, one bar per file redrawn in place
// (name, MB done / total, MB/s); otherwise (logs, CI) one line per file once it is complete.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace taco::server {

enum class ProgressStyle {
    kAuto,  // kBar when the stream is a terminal, else kLines
    kBar,
    kLines,
    kNone,
};

class DownloadProgress {
public:
    explicit DownloadProgress(ProgressStyle style, std::FILE* out = stderr);

    // A file starts; `resumed_bytes` are already on disk from an earlier attempt, `total_bytes` is -1 if unknown.
    void start(const std::string& name, int64_t resumed_bytes, int64_t total_bytes);
    // `bytes` of the file are on disk now (resumed ones included).
    void update(int64_t bytes);
    void finish(int64_t bytes);

private:
    void draw(int64_t bytes, bool last);

    using Clock = std::chrono::steady_clock;
    ProgressStyle style_;
    std::FILE* out_;
    std::string name_;
    int64_t resumed_bytes_ = 0;
    int64_t total_bytes_ = -1;
    Clock::time_point started_;
    Clock::time_point last_draw_;
};

}  // namespace taco::server
