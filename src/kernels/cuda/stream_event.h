// Streams and events for ordering work across streams (a runner's KV copy stream against its compute stream) and
// for knowing when the host may reuse a pinned buffer that an asynchronous copy reads. Plain C++ header: the runner
// includes it without nvcc. init_backend() must have succeeded before create().
#pragma once

#include <memory>

#include "core/status.h"

namespace taco::cuda {

// A non-blocking stream with no library handle (DeviceStream is the compute stream with cuBLASLt).
class Stream {
public:
    static Result<std::unique_ptr<Stream>> create();
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    void* get() const { return stream_; }  // cudaStream_t
    // Waits for everything queued on the stream; aborts naming the error of a failed copy or kernel.
    void synchronize() const;

private:
    Stream() = default;
    void* stream_ = nullptr;
};

// An event without timing. record() captures the work queued on a stream so far; wait() makes work queued later on
// another stream start after it; synchronize() blocks the host until it is done (at once when never recorded).
class Event {
public:
    static Result<std::unique_ptr<Event>> create();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    void record(void* stream);
    void wait(void* stream) const;
    void synchronize() const;

private:
    Event() = default;
    void* event_ = nullptr;  // cudaEvent_t
};

}  // namespace taco::cuda
