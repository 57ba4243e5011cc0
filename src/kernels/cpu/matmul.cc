// matmul dispatch: checks, then the widest ISA the machine has. The scalar path is the reference; the SIMD
// paths (matmul_avx2.cc, matmul_avx512.cc) reproduce its canonical reduction order bit for bit.
#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/canonical_dot.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {

void matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView& y) {
    MatmulArgs args{x.as<float>(), w.data, w.dtype, y.as<float>(), x.shape[0], w.shape[0], x.shape[1]};
    matmul_dispatch(args);
    if (bias != nullptr) {
        const int64_t m = x.shape[0], n = w.shape[0];
        const float* b = bias->as<float>();
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) args.y[i * n + j] += b[j];
    }
}

// Each expert's rows are one matmul over that expert's [N, K] slice: every output row is computed on its own in
// the canonical order, so the grouping does not change a bit.
void grouped_matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView& expert_offsets,
                    const TensorView& y) {
    const int32_t* offsets = expert_offsets.as<int32_t>();
    const int64_t num_experts = w.shape[0], n = w.shape[1], k = w.shape[2];
    const size_t expert_bytes = size_t(w.strides[0]) * dtype_size_bytes(w.dtype);
    for (int64_t e = 0; e < num_experts; ++e) {
        const int64_t begin = offsets[e], end = offsets[e + 1];
        TACO_CHECK_MSG(0 <= begin && begin <= end && end <= x.shape[0], "grouped_matmul: expert {} rows [{}, {})", e,
                       begin, end);
        if (begin == end) continue;
        const void* we = static_cast<const uint8_t*>(w.data) + size_t(e) * expert_bytes;
        matmul_dispatch(MatmulArgs{x.row<float>(begin), we, w.dtype, y.row<float>(begin), end - begin, n, k});
    }
    const int64_t ran = offsets[num_experts];
    TACO_CHECK_LE(int64_t(ran), x.shape[0]);
    std::fill(y.row<float>(ran), y.row<float>(0) + y.numel(), 0.0f);
}

}  // namespace taco::cpu

namespace taco::cpu {

void matmul_scalar(const MatmulArgs& a) {
    const size_t w_row_bytes = size_t(a.k) * dtype_size_bytes(a.w_dtype);
    // Threads split the output columns (weight rows), so each weight row is read by one thread.
    ThreadPool::global().parallel_for(a.n, 16, [&](int64_t n_begin, int64_t n_end) {
        for (int64_t j = n_begin; j < n_end; ++j) {
            const void* w_row = static_cast<const uint8_t*>(a.w) + size_t(j) * w_row_bytes;
            for (int64_t i = 0; i < a.m; ++i)
                a.y[i * a.n + j] = canonical_dot_any(a.x + i * a.k, w_row, a.w_dtype, a.k);
        }
    });
}

}  // namespace taco::cpu
