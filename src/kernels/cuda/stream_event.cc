// Stream and Event (stream_event.h): thin checked wrappers of the CUDA runtime's streams and events.
#include "kernels/cuda/stream_event.h"

#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"

namespace taco::cuda {

Result<std::unique_ptr<Stream>> Stream::create() {
    std::unique_ptr<Stream> s(new Stream());
    cudaStream_t stream = nullptr;
    const cudaError_t made = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (made != cudaSuccess) {
        cudaGetLastError();
        return error("cannot create a CUDA stream: {}", cudaGetErrorString(made));
    }
    s->stream_ = stream;
    return s;
}

Stream::~Stream() {
    if (stream_ == nullptr) return;
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void Stream::synchronize() const { TACO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_))); }

Result<std::unique_ptr<Event>> Event::create() {
    std::unique_ptr<Event> e(new Event());
    cudaEvent_t event = nullptr;
    const cudaError_t made = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (made != cudaSuccess) {
        cudaGetLastError();
        return error("cannot create a CUDA event: {}", cudaGetErrorString(made));
    }
    e->event_ = event;
    return e;
}

Event::~Event() {
    if (event_ == nullptr) return;
    cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
    cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void Event::record(void* stream) {
    TACO_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream)));
}

void Event::wait(void* stream) const {
    TACO_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event_), 0));
}

void Event::synchronize() const { TACO_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_))); }

}  // namespace taco::cuda
