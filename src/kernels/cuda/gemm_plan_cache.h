// GemmPlan: one cuBLASLt matmul y = x . w^T (+ bias) as ops::matmul runs it, with its algorithm chosen once, and
// GemmPlanCache: the plans by shape, so a steady-state call creates no descriptor and asks no heuristic.
//
// Row-major operands in cuBLASLt's column-major terms: x [M, K] is a K x M column-major matrix, w [N, K] is K x N and
// y [M, N] is N x M, so y^T = w . x^T is the column-major product D (N x M) = op(A) (N x K) . B (K x M) with A = w
// transposed (TRANSA = T), B = x, m = N, n = M, k = K. The bias [N] runs along D's rows, as cuBLASLt's bias
// epilogue adds it.
//
// Precision: CUBLAS_COMPUTE_32F with f32 scale: fp32 accumulation for bf16 and f16 inputs, and plain fp32 (never
// TF32) for f32 inputs, so an fp32 model matches the CPU backend to rounding.
//
// Order of the sums (ARCHITECTURE.md "Parity rule"), what is and is not guaranteed:
//   - split-K only out of place: an output element is one sequential dot product inside one kernel, or the fp32
//     partial sums of K splits written to the workspace and added by a separate kernel in a fixed order
//     (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE); in-place reductions and partials in y's dtype are refused. So the
//     same call gives the same bits every time (no atomics, no order that depends on timing). Split-K is what
//     fills the GPU for a few rows and few outputs (a decode batch of 32 through k_proj);
//   - a plan is fixed per (M, N, K, dtypes, bias, alignments, device): the same shape always runs the same kernel;
//   - NOT guaranteed: a row's bits across different M. The heuristic may pick another kernel (tile shape, MMA
//     instruction) for another number of rows, and the order inside a tensor-core MMA differs between kernels, so
//     a row can differ in its last bits between batch sizes. The difference is fp32 rounding of the same sum; the
//     CUDA backend's parity with the CPU is measured against that bound, not bit for bit.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "core/dtype.h"

namespace taco::cuda {

// Everything a plan depends on. Alignments are of the operands' addresses in bytes (the largest power of two that
// divides the address, at most 256): cuBLASLt's kernels need aligned pointers, so views at other offsets (rows of a
// larger buffer) get plans of their own.
struct GemmKey {
    int64_t m = 0, n = 0, k = 0;    // y [m, n] = x [m, k] . w [n, k]^T
    DType in_dtype = DType::kF32;   // x and w
    DType out_dtype = DType::kF32;  // y
    bool bias = false;              // bias [n] f32
    uint32_t align_x = 256, align_w = 256, align_y = 256, align_bias = 256;
    size_t workspace_bytes = 0;  // the GEMM workspace the plan may use
    int device = 0;              // the CUDA device its algorithm was chosen on
    // -1: the algorithm the rule in GemmPlan::choose_algorithm_among picks. i >= 0: the i-th allowed candidate in
    // the heuristic's order instead (cuda_gemm_bench times every candidate this way); a plan for an index past the
    // last candidate aborts, so ask GemmPlan::allowed_candidates first.
    int candidate = -1;

    auto tied() const {
        return std::tie(m, n, k, in_dtype, out_dtype, bias, align_x, align_w, align_y, align_bias, workspace_bytes,
                        device, candidate);
    }
    bool operator<(const GemmKey& other) const { return tied() < other.tied(); }
};

// The largest power of two dividing the address, at most 256 (GemmKey's alignments).
uint32_t address_alignment(const void* p);

class GemmPlan {
public:
    // Chooses the algorithm (cublasLtMatmulAlgoGetHeuristic) and creates the descriptors; `bias` is the bias the
    // first call runs with (the heuristic reads its alignment), nullptr without one. Aborts, naming the shape and
    // dtypes, when cuBLASLt has no algorithm for it.
    GemmPlan(cublasLtHandle_t handle, const GemmKey& key, const float* bias);
    ~GemmPlan();
    GemmPlan(const GemmPlan&) = delete;
    GemmPlan& operator=(const GemmPlan&) = delete;

    // Enqueues y = x . w^T (+ bias) on the stream. The operands must match the key (shape, dtypes, alignments);
    // the workspace has at least key().workspace_bytes.
    void run(cublasLtHandle_t handle, const void* x, const void* w, const float* bias, void* y, void* workspace,
             cudaStream_t stream) const;

    const GemmKey& key() const { return key_; }
    // Whether cuBLASLt adds the f32 bias in its epilogue (before the rounding to y's dtype: an f32 y); otherwise a
    // kernel of its own adds it to y after the product (a bf16 / f16 y: one more rounding).
    bool bias_in_epilogue() const { return bias_in_epilogue_; }
    size_t algo_workspace_bytes() const { return algo_workspace_bytes_; }
    // The chosen algorithm's grid in waves of the GPU (cuBLASLt's wavesCount).
    float waves() const { return waves_; }
    // The chosen algorithm's configuration in words: id, tile, stages, split-K (benchmark labels).
    std::string describe() const;
    // How many candidates the heuristic allows for the key without a bias (KEY.candidate is ignored): the range
    // of GemmKey::candidate.
    static int allowed_candidates(cublasLtHandle_t handle, const GemmKey& key);

private:
    // desc_ with the transposes, and the f32 bias epilogue when epilogue_bias is given.
    void create_descriptor(const float* epilogue_bias);
    // Asks the heuristic for an algorithm (sequential or out-of-place split-K) under the current descriptor; false
    // when it has none.
    bool choose_algorithm(cublasLtHandle_t handle);
    bool choose_algorithm_among(cublasLtHandle_t handle, uint32_t reduction_mask);

    GemmKey key_;
    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t a_ = nullptr;  // w: K x N column-major, ld K, used transposed
    cublasLtMatrixLayout_t b_ = nullptr;  // x: K x M column-major, ld K
    cublasLtMatrixLayout_t d_ = nullptr;  // y: N x M column-major, ld N (also C, with beta = 0)
    cublasLtMatmulAlgo_t algo_{};
    size_t algo_workspace_bytes_ = 0;
    float waves_ = 0;
    int allowed_count_ = 0;  // allowed candidates under the last heuristic query
    bool bias_in_epilogue_ = false;
    cublasStatus_t heuristic_status_ = CUBLAS_STATUS_SUCCESS;  // of the last heuristic query (error messages)
    // The descriptor holds the bias pointer, which changes between calls: setting it and enqueueing the product
    // happen under this lock so that threads sharing a plan do not race on it.
    mutable std::mutex run_mutex_;
};

// Plans by key, created on first use and kept for the process (a model has a handful of GEMM shapes per distinct
// number of rows M, and each plan holds only host descriptors).
class GemmPlanCache {
public:
    // The process-wide cache ops::matmul uses on CUDA.
    static GemmPlanCache& global();

    // The plan for `key`, creating it (with the handle, and `bias` for its alignment) on first use.
    const GemmPlan& get(cublasLtHandle_t handle, const GemmKey& key, const float* bias);
    size_t size() const;

private:
    mutable std::mutex mutex_;  // guards plans_
    std::map<GemmKey, std::unique_ptr<GemmPlan>> plans_;
};

}  // namespace taco::cuda
