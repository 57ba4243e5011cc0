#include "core/thread_pool.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

namespace taco {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexExactlyOnce) {
    ThreadPool pool(4);
    for (int64_t n : {1, 3, 4, 17, 1000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        });
        for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
}

TEST(ThreadPool, NestedCallsRunInlineInsteadOfDeadlocking) {
    ThreadPool pool(3);
    std::atomic<int> total{0};
    pool.parallel_for(6, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
            pool.parallel_for(10, 1, [&](int64_t b2, int64_t e2) { total += int(e2 - b2); });
    });
    EXPECT_EQ(total.load(), 60);
}

}  // namespace
}  // namespace taco
