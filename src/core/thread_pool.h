// One process-wide pool of worker threads for the CPU backend, sized to the machine (or TACO_NUM_THREADS).
// parallel_for splits [0, n) into contiguous ranges; a kernel that computes each output element from its own
// inputs alone (a fixed reduction order per row) gives bitwise the same result whatever the split, which is
// what keeps the CPU backend batch-invariant (ARCHITECTURE.md, "Parity rule").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace taco {

class ThreadPool {
public:
    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int num_threads() const { return int(workers_.size()) + 1; }

    // Calls fn(begin, end) over disjoint ranges covering [0, n), each at least `grain` long (but the last),
    // on the calling thread and the workers; returns when all are done. Not reentrant: fn must not call
    // parallel_for (nested calls run inline).
    void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

    // The shared pool, created on first use.
    static ThreadPool& global();

private:
    void worker_loop(int index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    const std::function<void(int64_t, int64_t)>* task_ = nullptr;
    int64_t task_n_ = 0;
    int64_t chunk_ = 0;
    int64_t num_chunks_ = 0;
    int64_t next_chunk_ = 0;
    int64_t chunks_done_ = 0;
    uint64_t generation_ = 0;
    bool stopping_ = false;
    bool busy_ = false;
};

// Number of threads the global pool uses: TACO_NUM_THREADS if set, else the hardware concurrency.
int default_num_threads();

}  // namespace taco
