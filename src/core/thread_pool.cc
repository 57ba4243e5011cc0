#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace taco {

int default_num_threads() {
    if (const char* env = std::getenv("TACO_NUM_THREADS")) {
        int n = std::atoi(env);
        if (n > 0) return n;
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int num_threads) {
    for (int i = 1; i < std::max(1, num_threads); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
    static ThreadPool pool(default_num_threads());
    return pool;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    grain = std::max<int64_t>(1, grain);
    int64_t max_chunks = (n + grain - 1) / grain;
    int64_t num_chunks = std::min<int64_t>(max_chunks, num_threads());
    std::unique_lock<std::mutex> lock(mutex_);
    if (num_chunks <= 1 || busy_) {  // small or nested: run inline
        lock.unlock();
        fn(0, n);
        return;
    }
    busy_ = true;
    task_ = &fn;
    task_n_ = n;
    chunk_ = (n + num_chunks - 1) / num_chunks;
    num_chunks_ = (n + chunk_ - 1) / chunk_;
    next_chunk_ = 0;
    chunks_done_ = 0;
    ++generation_;
    work_ready_.notify_all();
    // The caller works too.
    while (next_chunk_ < num_chunks_) {
        int64_t c = next_chunk_++;
        lock.unlock();
        fn(c * chunk_, std::min(n, (c + 1) * chunk_));
        lock.lock();
        ++chunks_done_;
    }
    work_done_.wait(lock, [this] { return chunks_done_ == num_chunks_; });
    task_ = nullptr;
    busy_ = false;
}

void ThreadPool::worker_loop(int /*index*/) {
    uint64_t seen_generation = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
        work_ready_.wait(lock, [&] { return stopping_ || (generation_ != seen_generation && task_ != nullptr); });
        if (stopping_) return;
        seen_generation = generation_;
        while (task_ != nullptr && next_chunk_ < num_chunks_) {
            int64_t c = next_chunk_++;
            const auto* fn = task_;
            int64_t n = task_n_;
            int64_t chunk = chunk_;
            lock.unlock();
            (*fn)(c * chunk, std::min(n, (c + 1) * chunk));
            lock.lock();
            if (++chunks_done_ == num_chunks_) work_done_.notify_all();
        }
    }
}

}  // namespace taco
