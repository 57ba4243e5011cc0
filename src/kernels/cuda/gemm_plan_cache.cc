// GemmPlan and GemmPlanCache (gemm_plan_cache.h): descriptors, the algorithm choice without split-K, the call.
#include "kernels/cuda/gemm_plan_cache.h"

#include <array>
#include <string>
#include <utility>

#include "core/check.h"
#include "kernels/cuda/cuda_check.h"

#define TACO_CUBLAS_CHECK(call)                                                            \
    do {                                                                                   \
        const cublasStatus_t taco_blas_status_ = (call);                                   \
        TACO_CHECK_MSG(taco_blas_status_ == CUBLAS_STATUS_SUCCESS, "{} failed: {}", #call, \
                       cublasLtGetStatusString(taco_blas_status_));                        \
    } while (0)

namespace taco::cuda {
namespace {

cudaDataType_t blas_type(DType dtype) {
    switch (dtype) {
        case DType::kF32: return CUDA_R_32F;
        case DType::kF16: return CUDA_R_16F;
        case DType::kBF16: return CUDA_R_16BF;
        default: TACO_CHECK_MSG(false, "matmul: no cuBLASLt type for {}", dtype_name(dtype));
    }
    return CUDA_R_32F;
}

// Candidates asked of the heuristic (GemmPlan::choose_algorithm_among says which is taken).
constexpr int kHeuristicCandidates = 32;
// A candidate whose grid fills at least this share of one wave of the GPU is taken in the heuristic's order; below
// it the fullest grid is (the heuristic's first choice for a decode batch of 32 rows and 1,024 outputs had 4 CTAs on
// 132 SMs and took 92 us where 3 would do: bench/results/h200-2026-12-03).
constexpr float kMinWaves = 0.5f;

}  // namespace

uint32_t address_alignment(const void* p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (a == 0) return 256;
    uint32_t align = 1;
    while (align < 256 && (a & align) == 0) align <<= 1;
    return align;
}

GemmPlan::GemmPlan(cublasLtHandle_t handle, const GemmKey& key, const float* bias) : key_(key) {
    TACO_CHECK_MSG(key.m > 0 && key.n > 0 && key.k > 0, "matmul: no GEMM plan for m {} n {} k {}", key.m, key.n, key.k);
    const cudaDataType_t in = blas_type(key.in_dtype), out = blas_type(key.out_dtype);
    TACO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, in, uint64_t(key.k), uint64_t(key.n), key.k));
    TACO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, in, uint64_t(key.k), uint64_t(key.m), key.k));
    TACO_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d_, out, uint64_t(key.n), uint64_t(key.m), key.n));
    if (key.bias) {
        // The f32 bias in the epilogue: added to the fp32 accumulator before the one rounding to y's dtype. The
        // bias type defaults to y's, so an f32 bias for a bf16 / f16 y is asked for explicitly; cuBLASLt 13.0 on an
        // H200 refuses that (INVALID_VALUE) and takes it only for an f32 y. Where it is refused, the product runs
        // on a descriptor made afresh without the bias attributes (a leftover bias type fails the heuristic too)
        // and add_bias_rows adds the bias after it.
        create_descriptor(bias);
        bias_in_epilogue_ = choose_algorithm(handle);
        if (bias_in_epilogue_) return;
        cublasLtMatmulDescDestroy(desc_);
        desc_ = nullptr;
    }
    create_descriptor(nullptr);
    TACO_CHECK_MSG(
        choose_algorithm(handle),
        "matmul: cuBLASLt has no algorithm without split-K or with an out-of-place fp32 split-K for x [{}, {}] "
        "{} . w [{}, {}]^T -> y {} (candidate {} of {} asked; last heuristic status: {})",
        key.m, key.k, dtype_name(key.in_dtype), key.n, key.k, dtype_name(key.out_dtype), key.candidate, allowed_count_,
        cublasLtGetStatusString(heuristic_status_));
}

void GemmPlan::create_descriptor(const float* epilogue_bias) {
    TACO_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    TACO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    TACO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    if (epilogue_bias == nullptr) return;
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = CUDA_R_32F;
    TACO_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    TACO_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    TACO_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &epilogue_bias,
                                                     sizeof(epilogue_bias)));
}

bool GemmPlan::choose_algorithm(cublasLtHandle_t handle) {
    // Algorithms whose dot products run in one sequence or are split over K with fp32 partials reduced out of place
    // (CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE); should the library refuse that mask, all schemes, filtered below.
    for (const uint32_t reduction_mask :
         {uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE), uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK)})
        if (choose_algorithm_among(handle, reduction_mask)) return true;
    return false;
}

bool GemmPlan::choose_algorithm_among(cublasLtHandle_t handle, uint32_t reduction_mask) {
    cublasLtMatmulPreference_t pref = nullptr;
    TACO_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t workspace = key_.workspace_bytes;
    const std::array<std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t>, 4> alignments = {{
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key_.align_w},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key_.align_x},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key_.align_y},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key_.align_y},
    }};
    TACO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                           sizeof(workspace)));
    TACO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                           &reduction_mask, sizeof(reduction_mask)));
    for (const auto& [attr, bytes] : alignments)
        TACO_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof(bytes)));

    std::array<cublasLtMatmulHeuristicResult_t, kHeuristicCandidates> results{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc_, a_, b_, d_, d_, pref,
                                                                 kHeuristicCandidates, results.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    // A failure (NOT_SUPPORTED, or INVALID_VALUE for an attribute combination this version refuses, such as the f32
    // bias of a bf16 y) means no candidate here; the constructor names the last status when nothing is left.
    heuristic_status_ = status;
    if (status != CUBLAS_STATUS_SUCCESS) return false;
    // The allowed candidates in the heuristic's order: one sequential dot product per output (no split), or a split
    // over K whose fp32 partials go to the workspace and are summed by a separate kernel in a fixed order. Never an
    // in-place reduction or partials in y's dtype (the order or the precision of the sum would change). The first
    // with a grid of at least kMinWaves is taken, else the one with the fullest grid: a choice made from the shape
    // and the device alone, so a shape always runs the same kernel. key_.candidate >= 0 takes that allowed
    // candidate instead (benchmarks).
    int chosen = -1, allowed = 0;
    bool rule_done = false;
    for (int i = 0; i < found; ++i) {
        const cublasLtMatmulHeuristicResult_t& r = results[size_t(i)];
        if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > workspace) continue;
        int32_t splits = 1;
        uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
        size_t written = 0;
        TACO_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                               sizeof(splits), &written));
        TACO_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                               sizeof(scheme), &written));
        const bool sequential = splits <= 1 && scheme == CUBLASLT_REDUCTION_SCHEME_NONE;
        const bool out_of_place = splits > 1 && scheme == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        if (!sequential && !out_of_place) continue;
        if (key_.candidate >= 0) {
            if (allowed == key_.candidate) chosen = i;
        } else if (!rule_done) {
            if (chosen < 0 || r.wavesCount > results[size_t(chosen)].wavesCount) chosen = i;
            if (r.wavesCount >= kMinWaves) {
                chosen = i;
                rule_done = true;
            }
        }
        ++allowed;
    }
    allowed_count_ = allowed;
    if (chosen < 0) return false;
    algo_ = results[size_t(chosen)].algo;
    algo_workspace_bytes_ = results[size_t(chosen)].workspaceSize;
    waves_ = results[size_t(chosen)].wavesCount;
    return true;
}

GemmPlan::~GemmPlan() {
    if (d_ != nullptr) cublasLtMatrixLayoutDestroy(d_);
    if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
    if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

void GemmPlan::run(cublasLtHandle_t handle, const void* x, const void* w, const float* bias, void* y, void* workspace,
                   cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    std::lock_guard<std::mutex> lock(run_mutex_);
    if (bias_in_epilogue_)
        TACO_CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    TACO_CUBLAS_CHECK(cublasLtMatmul(handle, desc_, &alpha, w, a_, x, b_, &beta, y, d_, y, d_, &algo_, workspace,
                                     algo_workspace_bytes_, stream));
}

std::string GemmPlan::describe() const {
    const std::array<std::pair<cublasLtMatmulAlgoConfigAttributes_t, const char*>, 6> attributes = {{
        {CUBLASLT_ALGO_CONFIG_ID, "id"},
        {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile"},
        {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages"},
        {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "splitk"},
        {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "swizzle"},
        {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "cluster"},
    }};
    std::string text;
    for (const auto& [attr, name] : attributes) {
        uint32_t value = 0;  // every attribute here is 32 bits or fewer; the rest of the word stays 0
        size_t written = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&algo_, attr, &value, sizeof(value), &written) !=
            CUBLAS_STATUS_SUCCESS)
            continue;
        text.append(name).append("=").append(std::to_string(value)).append(" ");
    }
    return text.append("waves=").append(std::to_string(waves_));
}

int GemmPlan::allowed_candidates(cublasLtHandle_t handle, const GemmKey& key) {
    GemmKey rule = key;
    rule.candidate = -1;
    rule.bias = false;
    return GemmPlan(handle, rule, nullptr).allowed_count_;
}

GemmPlanCache& GemmPlanCache::global() {
    static GemmPlanCache cache;
    return cache;
}

const GemmPlan& GemmPlanCache::get(cublasLtHandle_t handle, const GemmKey& key, const float* bias) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<GemmPlan>& plan = plans_[key];
    if (plan == nullptr) plan = std::make_unique<GemmPlan>(handle, key, bias);
    return *plan;
}

size_t GemmPlanCache::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.size();
}

}  // namespace taco::cuda
