// OutputStream: the consumer side of one request. The engine thread pushes outputs; any thread reads them.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/request_output.h"

namespace taco {

class OutputStream {
public:
    explicit OutputStream(RequestId id) : id_(id) {}

    RequestId id() const { return id_; }
    // Blocks until the next output; nullopt once the final one has been read.
    std::optional<RequestOutput> next();
    // Non-blocking: the next output if one is ready.
    std::optional<RequestOutput> try_next();
    // Collects every output not read yet and merges them into the final one: the whole of each sample, and the
    // prompt ids when the request's first output is among them.
    RequestOutput wait_final();

    // Engine side.
    void push(RequestOutput output);

private:
    RequestId id_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RequestOutput> queue_;
    bool closed_ = false;   // the final output has been pushed
    bool drained_ = false;  // ... and read
};

}  // namespace taco
