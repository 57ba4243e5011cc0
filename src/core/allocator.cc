#include "core/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/check.h"

namespace taco {
namespace {

constexpr size_t kAlignment = 256;

class HostAllocator final : public Allocator {
public:
    MemoryKind kind() const override { return MemoryKind::kHost; }

protected:
    void* do_allocate(size_t bytes) override {
        const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
        return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    }
    void do_deallocate(void* p) override { std::free(p); }
};

struct Registry {
    HostAllocator host;
    std::atomic<Allocator*> pinned{nullptr};
    std::atomic<Allocator*> device{nullptr};
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

const char* device_name(Device device) {
    switch (device) {
        case Device::kCpu: return "cpu";
        case Device::kCuda: return "cuda";
    }
    return "?";
}

const char* memory_kind_name(MemoryKind kind) {
    switch (kind) {
        case MemoryKind::kHost: return "host";
        case MemoryKind::kPinnedHost: return "pinned host";
        case MemoryKind::kDevice: return "device";
    }
    return "?";
}

void* Allocator::allocate(size_t bytes) {
    void* p = do_allocate(bytes);
    TACO_CHECK_MSG(p != nullptr, "out of {} memory allocating {} bytes", memory_kind_name(kind()), bytes);
    num_allocations_.fetch_add(1, std::memory_order_relaxed);
    const int64_t in_use = bytes_in_use_.fetch_add(int64_t(bytes), std::memory_order_relaxed) + int64_t(bytes);
    int64_t peak = peak_bytes_in_use_.load(std::memory_order_relaxed);
    while (in_use > peak && !peak_bytes_in_use_.compare_exchange_weak(peak, in_use, std::memory_order_relaxed)) {
    }
    return p;
}

void Allocator::deallocate(void* p, size_t bytes) {
    if (p == nullptr) return;
    do_deallocate(p);
    bytes_in_use_.fetch_sub(int64_t(bytes), std::memory_order_relaxed);
}

AllocationStats Allocator::stats() const {
    return {num_allocations_.load(), bytes_in_use_.load(), peak_bytes_in_use_.load()};
}

bool has_allocator(MemoryKind kind) {
    switch (kind) {
        case MemoryKind::kHost: return true;
        case MemoryKind::kPinnedHost: return registry().pinned.load() != nullptr;
        case MemoryKind::kDevice: return registry().device.load() != nullptr;
    }
    return false;
}

Allocator& allocator_for(MemoryKind kind) {
    Allocator* a = nullptr;
    switch (kind) {
        case MemoryKind::kHost: return registry().host;
        case MemoryKind::kPinnedHost: a = registry().pinned.load(); break;
        case MemoryKind::kDevice: a = registry().device.load(); break;
    }
    TACO_CHECK_MSG(a != nullptr,
                   "no {} memory: the CUDA backend is not initialised (no usable GPU, or a CPU-only build)",
                   memory_kind_name(kind));
    return *a;
}

void register_allocator(MemoryKind kind, Allocator* allocator) {
    TACO_CHECK(allocator != nullptr && allocator->kind() == kind);
    switch (kind) {
        case MemoryKind::kHost: TACO_CHECK_MSG(false, "the host allocator cannot be replaced"); return;
        case MemoryKind::kPinnedHost: registry().pinned.store(allocator); return;
        case MemoryKind::kDevice: registry().device.store(allocator); return;
    }
}

int64_t total_num_allocations() {
    int64_t n = registry().host.stats().num_allocations;
    for (MemoryKind kind : {MemoryKind::kPinnedHost, MemoryKind::kDevice})
        if (has_allocator(kind)) n += allocator_for(kind).stats().num_allocations;
    return n;
}

namespace {

// A number read from the first line of `path` ("max" or an unreadable file: -1).
int64_t read_bytes_file(const char* path) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") return -1;
    try {
        return std::stoll(text);
    } catch (const std::exception&) {
        return -1;
    }
}

}  // namespace

int64_t host_available_bytes() {
    int64_t available = -1;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        int64_t kib = 0;
        if (fields >> kib) available = kib * 1024;
        break;
    }
    // cgroup v2: the limit and what this cgroup already uses.
    const int64_t limit = read_bytes_file("/sys/fs/cgroup/memory.max");
    const int64_t used = read_bytes_file("/sys/fs/cgroup/memory.current");
    if (limit >= 0 && used >= 0) {
        const int64_t left = std::max<int64_t>(0, limit - used);
        available = available < 0 ? left : std::min(available, left);
    }
    return available;
}

}  // namespace taco
