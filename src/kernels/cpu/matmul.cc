// matmul dispatch: checks, then the widest ISA the machine has. The scalar path is the reference; the SIMD
// paths (matmul_avx2.cc, matmul_avx512.cc) reproduce its canonical reduction order bit for bit.
#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/thread_pool.h"
#include "kernels/cpu/canonical_dot.h"
#include "kernels/cpu/dot_internal.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/ops.h"

namespace taco::ops {

void matmul(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y) {
    TACO_CHECK_EQ(x.ndim, 2);
    TACO_CHECK_EQ(w.ndim, 2);
    TACO_CHECK_EQ(y.ndim, 2);
    TACO_CHECK(x.dtype == DType::kF32 && y.dtype == DType::kF32);
    TACO_CHECK_MSG(w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16,
                   "matmul weight dtype {}", dtype_name(w.dtype));
    TACO_CHECK(x.is_contiguous() && w.is_contiguous() && y.is_contiguous());
    TACO_CHECK_EQ(x.shape[1], w.shape[1]);
    TACO_CHECK_EQ(y.shape[0], x.shape[0]);
    TACO_CHECK_EQ(y.shape[1], w.shape[0]);
    if (bias != nullptr) {
        TACO_CHECK_EQ(bias->ndim, 1);
        TACO_CHECK_EQ(bias->shape[0], w.shape[0]);
        TACO_CHECK(bias->is_contiguous());
    }
    cpu::MatmulArgs args{x.as<float>(), w.data, w.dtype, y.as<float>(), x.shape[0], w.shape[0], x.shape[1]};
    cpu::matmul_dispatch(args);
    if (bias != nullptr) {
        const int64_t m = x.shape[0], n = w.shape[0];
        std::vector<float> bias_f32(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) bias_f32[size_t(j)] = load_as_f32(bias->data, bias->dtype, size_t(j));
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) args.y[i * n + j] += bias_f32[size_t(j)];
    }
}

float dot(const float* a, const float* b, int64_t k) { return cpu::dot_f32(a, b, k); }

}  // namespace taco::ops

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
