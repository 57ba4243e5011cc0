// Where tensor memory comes from: one Allocator interface for the three kinds of memory a runner uses.
//   kHost:       ordinary host memory (64-byte aligned), the CPU backend's activations, KV and weights copies;
//   kPinnedHost: page-locked host memory, the staging buffers of host <-> device copies (ForwardBatch upload,
//                the host tier of the prefix cache, weight streaming);
//   kDevice:     GPU memory.
// The host allocator always exists; the CUDA backend registers the other two when a GPU is usable
// (kernels/cuda). Every allocator counts what it hands out, so a test can assert that a warmed-up forward pass
// allocates nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace taco {

enum class Device : uint8_t { kCpu, kCuda };
enum class MemoryKind : uint8_t { kHost, kPinnedHost, kDevice };

const char* device_name(Device device);         // "cpu", "cuda"
const char* memory_kind_name(MemoryKind kind);  // "host", "pinned host", "device"
inline Device device_of(MemoryKind kind) { return kind == MemoryKind::kDevice ? Device::kCuda : Device::kCpu; }

struct AllocationStats {
    int64_t num_allocations = 0;  // calls to allocate() since start
    int64_t bytes_in_use = 0;
    int64_t peak_bytes_in_use = 0;
};

class Allocator {
public:
    virtual ~Allocator() = default;
    virtual MemoryKind kind() const = 0;
    // At least `bytes` (0 allowed), aligned to 256 bytes; aborts with the size when memory runs out.
    void* allocate(size_t bytes);
    void deallocate(void* p, size_t bytes);
    AllocationStats stats() const;

protected:
    virtual void* do_allocate(size_t bytes) = 0;
    virtual void do_deallocate(void* p) = 0;

private:
    std::atomic<int64_t> num_allocations_{0};
    std::atomic<int64_t> bytes_in_use_{0};
    std::atomic<int64_t> peak_bytes_in_use_{0};
};

// The allocator of a kind of memory. Host always exists; pinned host and device abort with a clear message until
// a backend has registered them (has_allocator tells).
Allocator& allocator_for(MemoryKind kind);
bool has_allocator(MemoryKind kind);
// Called once by a backend at start; the allocator must outlive every tensor it allocates.
void register_allocator(MemoryKind kind, Allocator* allocator);

// The sum of num_allocations over every registered allocator.
int64_t total_num_allocations();

// Host memory this process can still take without being killed: the kernel's MemAvailable, lowered to what the
// cgroup (a container's memory limit) leaves; -1 when neither can be read. What loading checks before it allocates
// weights, so that a model too large for the machine is an error naming the sizes rather than an abort or the OOM
// killer (an allocation past physical memory may succeed, and fail only when its pages are touched).
int64_t host_available_bytes();

}  // namespace taco
