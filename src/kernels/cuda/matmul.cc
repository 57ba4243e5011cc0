// ops::matmul on CUDA: y [M, N] = x [M, K] . w [N, K]^T (+ bias [N] f32). Decode shapes (M <= kSkinnyMaxRows, f16 /
// bf16) run the skinny kernel (skinny_gemm.h: memory-bound, batch-invariant up to that many rows); the rest run through
// cuBLASLt, one cached plan per shape (gemm_plan_cache.h: the column-major mapping, fp32 accumulation and what the
// order of the sums guarantees).
//
// Dtypes: x and w alike (f32, f16 or bf16: on CUDA the loader converts weights to the activation dtype), y in x's
// dtype or f32 (the lm_head's and the MoE router's f32 logits from bf16 hidden states). ops.cc lets the CPU's
// f16 / bf16 weights with f32 activations through; here any other mix aborts naming the dtypes.
#include <cuda_runtime.h>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm_plan_cache.h"
#include "kernels/cuda/matmul_bias.h"
#include "kernels/cuda/skinny_gemm.h"

namespace taco::cuda {

void matmul(const ExecContext& ctx, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView& y) {
    TACO_CHECK_MSG(x.dtype == w.dtype,
                   "matmul on CUDA: x is {} and w is {}; the CUDA backend takes weights in the activation dtype "
                   "(the loader converts them)",
                   dtype_name(x.dtype), dtype_name(w.dtype));
    TACO_CHECK_MSG(y.dtype == x.dtype || y.dtype == DType::kF32,
                   "matmul on CUDA: y is {} for {} x and w; y is in x's dtype or F32", dtype_name(y.dtype),
                   dtype_name(x.dtype));
    TACO_CHECK_MSG(ctx.blas_handle != nullptr, "matmul on CUDA: the context has no cuBLASLt handle");
    const int64_t m = x.shape[0], n = w.shape[0], k = x.shape[1];
    if (m == 0 || n == 0) return;
    TACO_CHECK_MSG(k > 0, "matmul on CUDA: x {} has no columns", x.shape_string());
    const float* bias_data = bias != nullptr ? static_cast<const float*>(bias->data) : nullptr;
    if (skinny_gemm_applies(m, n, k, x.dtype, y.dtype, x.data, w.data)) {
        skinny_gemm(x.data, w.data, bias_data, y.data, m, n, k, x.dtype, y.dtype, ctx.stream);
        return;
    }
    int device = 0;
    TACO_CUDA_CHECK(cudaGetDevice(&device));

    GemmKey key;
    key.m = m;
    key.n = n;
    key.k = k;
    key.in_dtype = x.dtype;
    key.out_dtype = y.dtype;
    key.bias = bias != nullptr;
    key.align_x = address_alignment(x.data);
    key.align_w = address_alignment(w.data);
    key.align_y = address_alignment(y.data);
    key.align_bias = bias != nullptr ? address_alignment(bias->data) : 256;
    key.workspace_bytes = ctx.blas_workspace.defined() ? ctx.blas_workspace.nbytes() : 0;
    key.device = device;
    auto handle = static_cast<cublasLtHandle_t>(ctx.blas_handle);
    const GemmPlan& plan = GemmPlanCache::global().get(handle, key, bias_data);
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    plan.run(handle, x.data, w.data, bias_data, y.data, ctx.blas_workspace.data, stream);
    if (bias != nullptr && !plan.bias_in_epilogue()) add_bias_rows(y.data, y.dtype, bias_data, m, n, ctx.stream);
}

void matmuls(const ExecContext& ctx, const TensorView& x, std::span<const ops::Projection> outs) {
    const int64_t m = x.shape[0], k = x.shape[1];
    SkinnyOutput skinny[kSkinnyMaxOutputs];
    const int count = int(outs.size());
    bool one_launch = count >= 1 && count <= kSkinnyMaxOutputs && m > 0;
    for (int i = 0; one_launch && i < count; ++i) {
        const ops::Projection& p = outs[size_t(i)];
        one_launch = p.w->dtype == x.dtype && p.y.dtype == outs[0].y.dtype && p.w->shape[0] > 0;
        skinny[i] = {p.w->data, p.bias != nullptr ? static_cast<const float*>(p.bias->data) : nullptr, p.y.data,
                     p.w->shape[0]};
    }
    if (one_launch && skinny_gemm_group_applies(m, k, x.dtype, outs[0].y.dtype, x.data, skinny, count)) {
        skinny_gemm_group(x.data, skinny, count, m, k, x.dtype, outs[0].y.dtype, ctx.stream);
        return;
    }
    for (const ops::Projection& p : outs) matmul(ctx, x, *p.w, p.bias, p.y);
}

}  // namespace taco::cuda
