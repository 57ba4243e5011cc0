// CudaGraph: one captured sequence of work on a stream (a decode step of a batch-size bucket), replayed with one
// launch. Plain C++ header (the executor includes it without nvcc); init_backend() must have succeeded.
//
// capture() runs `body` with the stream in capture mode (thread-local: a call from this thread that would
// synchronise, such as a blocking copy, fails the capture instead of silently splitting it) and instantiates the
// result. What the body queued is recorded, not run; replay() runs it with the same arguments at the same addresses,
// so every buffer the body touched must stay where it is while the graph lives.
#pragma once

#include <functional>
#include <memory>

#include "core/status.h"

namespace taco::cuda {

class CudaGraph {
public:
    // Errors: the capture failed (a synchronising or otherwise unsupported call in the body), or instantiation did.
    static Result<std::unique_ptr<CudaGraph>> capture(void* stream, const std::function<void()>& body);
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    // Queues the captured work on `stream` (a cudaStream_t); aborts naming the error when the launch fails.
    void replay(void* stream) const;
    // Kernel and copy nodes in the graph (tests and logs).
    size_t num_nodes() const { return num_nodes_; }

private:
    CudaGraph() = default;
    void* graph_ = nullptr;  // cudaGraph_t
    void* exec_ = nullptr;   // cudaGraphExec_t
    size_t num_nodes_ = 0;
};

}  // namespace taco::cuda
