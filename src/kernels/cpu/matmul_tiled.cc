// The blocking and threading shared by the SIMD matmul paths (matmul_avx2.cc, matmul_avx512.cc).
#include <algorithm>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {
namespace {

// x rows of one M block: [m_block, k] f32 kept under this size so they stay in L2 (2 MiB per core on the
// machines we target) next to the weight tile in flight.
constexpr int64_t kXBlockBytes = int64_t(1) << 20;
// Work (multiply-adds) below which waking another thread costs more than it saves.
constexpr int64_t kMinFmasPerChunk = int64_t(1) << 16;

}  // namespace

void matmul_tiled(const MatmulArgs& a, const MatmulTiling& t) {
    TACO_CHECK(t.max_mr >= 1 && t.max_nr >= 1 && t.tile != nullptr);
    if (a.m <= 0 || a.n <= 0) return;
    const int64_t x_row_bytes = std::max<int64_t>(1, a.k) * int64_t(sizeof(float));
    const int64_t m_block = std::max<int64_t>(t.max_mr, kXBlockBytes / x_row_bytes / t.max_mr * t.max_mr);
    const int64_t num_m_blocks = (a.m + m_block - 1) / m_block;
    const int64_t num_n_tiles = (a.n + t.max_nr - 1) / t.max_nr;
    // Work items are (M block, weight tile) pairs, weight tiles innermost: a thread's contiguous range walks
    // the weight rows in order (streaming for GEMV) and a few M blocks at most, and a matmul with few weight
    // rows but many x rows still spreads over all threads.
    const int64_t fmas_per_item = std::min(a.m, m_block) * std::max<int64_t>(1, a.k) * t.max_nr;
    const int64_t grain = std::max<int64_t>(1, (kMinFmasPerChunk + fmas_per_item - 1) / fmas_per_item);
    ThreadPool::global().parallel_for(num_m_blocks * num_n_tiles, grain, [&](int64_t item_begin, int64_t item_end) {
        for (int64_t item = item_begin; item < item_end; ++item) {
            const int64_t mb = item / num_n_tiles * m_block;
            const int64_t mb_end = std::min(a.m, mb + m_block);
            const int64_t j = item % num_n_tiles * t.max_nr;
            const int nr = int(std::min<int64_t>(t.max_nr, a.n - j));
            for (int64_t i = mb; i < mb_end; i += t.max_mr)
                t.tile(a, i, int(std::min<int64_t>(t.max_mr, mb_end - i)), j, nr);
        }
    });
}

}  // namespace taco::cpu
