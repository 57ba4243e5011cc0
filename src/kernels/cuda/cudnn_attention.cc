// cuDNN's fused flash attention for prefill steps (cudnn_attention.h): the graph, its plans by shape, the run.
#include "kernels/cuda/cudnn_attention.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "core/log.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_attention_prep.h"
#include "kernels/cuda/cudnn_graph.h"

namespace taco::cuda {
namespace {

// Everything a plan depends on (the graph's dims and strides; pointers and lengths are run-time inputs).
struct SdpaKey {
    int device = 0;
    int64_t b = 0, s_q = 0;                                  // sequence-count bucket, query-length bucket
    int64_t h = 0, h_kv = 0, d = 0;                          // heads, kv heads, head dim
    int64_t num_blocks = 0, block_size = 0, max_blocks = 0;  // the cache and the block tables' width
    cudnnDataType_t dtype = CUDNN_DATA_BFLOAT16;
    // The stream the plan's steps run on: a plan's workspace and per-step inputs are its own, so two streams never
    // share one (0 for probes).
    uintptr_t stream = 0;

    auto tied() const {
        return std::tie(device, b, s_q, h, h_kv, d, num_blocks, block_size, max_blocks, dtype, stream);
    }
    bool operator<(const SdpaKey& other) const { return tied() < other.tied(); }
};

// The graph's non-virtual tensors (the variant pack's uids); virtual ones take ids from kFirstVirtual up.
enum Uid : int64_t {
    kQ = 1,
    kK,
    kV,
    kO,
    kSeqLenQ,
    kSeqLenKv,
    kPageTableK,
    kPageTableV,
    kRaggedQ,
    kRaggedO,
    kScale,
    kNegInf,
    kFirstVirtual = 100,
};

struct SdpaPlan {
    SdpaGraphVariant variant;  // the form of the graph cuDNN took
    // Every descriptor the plan was built from, kept for its lifetime: tensors and the descriptors operations point
    // to, then the operations, the graph, the heuristics and the engine configs.
    std::vector<std::unique_ptr<CudnnDesc>> owned;
    std::vector<CudnnDesc> descs;
    CudnnDesc plan;
    int64_t workspace_bytes = 0;
    // Device: the plan's workspace, then its per-step inputs for its b (a bucket: the step's sequences, then rows of
    // no query and no keys): ragged offsets [b + 1] in int64 and int32, seq_len_q and seq_len_kv [b], and the page
    // table [b, max_blocks] a step of fewer sequences copies its rows into (the rows past them hold block ids some
    // step wrote, or 0: ids of the cache, never read for a sequence of no keys).
    void* workspace = nullptr;
    int64_t* ragged = nullptr;      // the offsets in int64 ...
    int32_t* ragged_i32 = nullptr;  // ... and in int32 (the variant says which it reads)
    int32_t* seq_len_q = nullptr;
    int32_t* seq_len_kv = nullptr;
    int32_t* page_table = nullptr;
    double build_ms = 0;

    ~SdpaPlan() {
        if (workspace != nullptr) cudaFree(workspace);
    }
};

// Builds the graph of cudnn_attention.h for `k` and the first execution plan cuDNN's heuristics give that finalizes.
class GraphBuilder {
public:
    GraphBuilder(const CudnnApi& api, cudnnHandle_t handle, const SdpaKey& k) : api_(api), handle_(handle), k_(k) {}

    std::unique_ptr<SdpaPlan> build(const SdpaGraphVariant& v, std::string& why) {
        auto out = std::make_unique<SdpaPlan>();
        const int64_t b = k_.b, h = k_.h, hk = k_.h_kv, d = k_.d, sq = k_.s_q, bs = k_.block_size;
        const int64_t skv = k_.max_blocks * bs;
        const bool paged = v.kv != SdpaGraphVariant::Kv::kDense;
        const cudnnDataType_t io = k_.dtype;
        const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32, boolean = CUDNN_DATA_BOOLEAN;
        const std::vector<int64_t> one{1, 1, 1, 1};
        const std::vector<int64_t> per_seq{b, 1, 1, 1};
        // Q and O: [b, h, s_q, d] over rows of h * d, ragged over our packed rows (the offsets in elements).
        const cudnnDataType_t offsets = v.ragged_i64 ? CUDNN_DATA_INT64 : CUDNN_DATA_INT32;
        const CudnnDesc* ragged_q = v.ragged_q ? &tensor(kRaggedQ, offsets, {b + 1, 1, 1, 1}, one) : nullptr;
        const CudnnDesc* ragged_o = v.ragged_q ? &tensor(kRaggedO, offsets, {b + 1, 1, 1, 1}, one) : nullptr;
        const std::vector<int64_t> rows_dims{b, h, sq, d}, rows_strides{sq * h * d, d, h * d, 1};
        const CudnnDesc& q = tensor(kQ, io, rows_dims, rows_strides, false, false, ragged_q);
        const CudnnDesc& o = tensor(kO, io, rows_dims, rows_strides, false, false, ragged_o);
        const CudnnDesc* seq_q = v.padding ? &tensor(kSeqLenQ, i32, per_seq, one) : nullptr;
        const CudnnDesc* seq_kv = v.padding || paged ? &tensor(kSeqLenKv, i32, per_seq, one) : nullptr;
        const CudnnDesc& scale = tensor(kScale, f32, one, one, false, true);
        const CudnnDesc& neg_inf = tensor(kNegInf, f32, one, one, false, true);

        // K^T [b, h_kv, d, s_kv] and V [b, h_kv, s_kv, d]: gathered from the pages, or (probes) dense [b, s_kv, h_kv,
        // d] rows.
        const CudnnDesc* kt = nullptr;
        const CudnnDesc* vv = nullptr;
        if (paged) {
            // Our cache [num_blocks, block_size, h_kv, d] as cuDNN's container [num_blocks, h_kv, block_size, d]
            // (kPagedHnd, a probe: a cache laid out [num_blocks, h_kv, block_size, d]).
            const std::vector<int64_t> cont_dims{k_.num_blocks, hk, bs, d};
            const std::vector<int64_t> cont_strides = v.kv == SdpaGraphVariant::Kv::kPagedNhd
                                                          ? std::vector<int64_t>{bs * hk * d, d, hk * d, 1}
                                                          : std::vector<int64_t>{bs * hk * d, bs * d, d, 1};
            const CudnnDesc& kc = tensor(kK, io, cont_dims, cont_strides);
            const CudnnDesc& vc = tensor(kV, io, cont_dims, cont_strides);
            const std::vector<int64_t> pt_dims{b, 1, k_.max_blocks, 1}, pt_strides{k_.max_blocks, k_.max_blocks, 1, 1};
            const CudnnDesc& pt_k = tensor(kPageTableK, i32, pt_dims, pt_strides);
            const CudnnDesc& pt_v = tensor(kPageTableV, i32, pt_dims, pt_strides);
            kt = &tensor(next_virtual(), io, {b, hk, d, skv}, {d * skv * hk, d * skv, 1, d}, true);
            ops_.push_back(paged_load(kc, pt_k, *seq_kv, *kt));
            vv = &tensor(next_virtual(), io, {b, hk, skv, d}, {d * skv * hk, d * skv, d, 1}, true);
            const CudnnDesc *vcp = &vc, *ptp = &pt_v;
            deferred_v_load_ = [this, vcp, ptp, seq_kv, vv] { ops_.push_back(paged_load(*vcp, *ptp, *seq_kv, *vv)); };
        } else {
            kt = &tensor(kK, io, {b, hk, d, skv}, {skv * hk * d, d, 1, hk * d});
            vv = &tensor(kV, io, {b, hk, skv, d}, {skv * hk * d, d, hk * d, 1});
        }
        // S = Q K^T [b, h, s_q, s_kv] in f32, the lengths as the GEMM's M and N.
        const std::vector<int64_t> s_dims{b, h, sq, skv}, s_strides{h * sq * skv, sq * skv, skv, 1};
        const CudnnDesc& s = tensor(next_virtual(), f32, s_dims, s_strides, true);
        ops_.push_back(matmul(q, *kt, s, seq_q, v.padding ? seq_kv : nullptr, nullptr));
        const CudnnDesc* score = &tensor(next_virtual(), f32, s_dims, s_strides, true);
        ops_.push_back(pointwise(CUDNN_POINTWISE_MUL, f32, s, &scale, nullptr, *score));
        if (v.padding) {  // row < seq_len_q and col < seq_len_kv
            const CudnnDesc& row = tensor(next_virtual(), i32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, *score, nullptr, nullptr, row, 2));
            const CudnnDesc& col = tensor(next_virtual(), i32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, *score, nullptr, nullptr, col, 3));
            const CudnnDesc& row_ok = tensor(next_virtual(), boolean, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_CMP_LT, boolean, row, seq_q, nullptr, row_ok));
            const CudnnDesc& col_ok = tensor(next_virtual(), boolean, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_CMP_LT, boolean, col, seq_kv, nullptr, col_ok));
            const CudnnDesc& in_range = tensor(next_virtual(), boolean, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_LOGICAL_AND, boolean, row_ok, &col_ok, nullptr, in_range));
            const CudnnDesc& padded = tensor(next_virtual(), f32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, *score, &neg_inf, &in_range, padded));
            score = &padded;
        }
        if (v.causal) {  // bottom-right with the lengths: col <= row + seq_len_kv - seq_len_q; else top-left
            const cudnnDataType_t index_prec = v.causal_int_index ? i32 : f32;
            const CudnnDesc& crow = tensor(next_virtual(), i32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, index_prec, *score, nullptr, nullptr, crow, 2));
            const CudnnDesc& ccol = tensor(next_virtual(), i32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, index_prec, *score, nullptr, nullptr, ccol, 3));
            const CudnnDesc* diagonal = &crow;
            if (v.padding) {
                const CudnnDesc& shifted = tensor(next_virtual(), i32, s_dims, s_strides, true);
                ops_.push_back(pointwise(CUDNN_POINTWISE_ADD, i32, crow, seq_kv, nullptr, shifted));
                diagonal = &tensor(next_virtual(), i32, s_dims, s_strides, true);
                ops_.push_back(pointwise(CUDNN_POINTWISE_SUB, i32, shifted, seq_q, nullptr, *diagonal));
            }
            const CudnnDesc& causal = tensor(next_virtual(), boolean, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_CMP_GE, boolean, *diagonal, &ccol, nullptr, causal));
            const CudnnDesc& masked = tensor(next_virtual(), f32, s_dims, s_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, *score, &neg_inf, &causal, masked));
            score = &masked;
        }
        // Softmax over the keys (with the statistics branch, max + log of the sum, where the variant has it).
        const std::vector<int64_t> r_dims{b, h, sq, 1}, r_strides{h * sq, sq, 1, 1};
        const CudnnDesc& row_max = tensor(next_virtual(), f32, r_dims, r_strides, true);
        ops_.push_back(reduction(CUDNN_REDUCE_TENSOR_MAX, *score, row_max));
        const CudnnDesc& centred = tensor(next_virtual(), f32, s_dims, s_strides, true);
        ops_.push_back(pointwise(CUDNN_POINTWISE_SUB, f32, *score, &row_max, nullptr, centred));
        const CudnnDesc& e = tensor(next_virtual(), f32, s_dims, s_strides, true);
        ops_.push_back(pointwise(CUDNN_POINTWISE_EXP, f32, centred, nullptr, nullptr, e));
        const CudnnDesc& row_sum = tensor(next_virtual(), f32, r_dims, r_strides, true);
        ops_.push_back(reduction(CUDNN_REDUCE_TENSOR_ADD, e, row_sum));
        if (v.stats) {
            const CudnnDesc& log_sum = tensor(next_virtual(), f32, r_dims, r_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_LOG, f32, row_sum, nullptr, nullptr, log_sum));
            const CudnnDesc& stats = tensor(next_virtual(), f32, r_dims, r_strides, true);
            ops_.push_back(pointwise(CUDNN_POINTWISE_ADD, f32, row_max, &log_sum, nullptr, stats));
        }
        // P in the activation dtype (the second GEMM's A operand must be).
        const CudnnDesc& p = tensor(next_virtual(), io, s_dims, s_strides, true);
        ops_.push_back(pointwise(CUDNN_POINTWISE_DIV, f32, e, &row_sum, nullptr, p));
        // O = P V with seq_len_kv as the GEMM's K.
        if (deferred_v_load_) deferred_v_load_();
        ops_.push_back(matmul(p, *vv, o, seq_q, nullptr, v.padding ? seq_kv : nullptr));

        std::vector<cudnnBackendDescriptor_t> op_handles;
        for (const CudnnDesc& op : ops_) op_handles.push_back(op.get());
        CudnnDesc graph(api_, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph", err_);
        graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(op_handles.size()),
                  op_handles.data());
        // The handle, as cudnn-frontend sets it where it has one (deprecated since 9.8, so by its number and with
        // its status ignored: a cuDNN that dropped it builds the graph without).
        if (graph.get() != nullptr && !err_.failed())
            api_.set_attribute(graph.get(), static_cast<cudnnBackendAttributeName_t>(800), CUDNN_TYPE_HANDLE, 1,
                               &handle_);
        graph.finalize();
        if (err_.failed()) {
            why = err_.what;
            return nullptr;
        }
        // cuDNN's ranked engines first (mode A), then its fallback list.
        std::string failures;
        bool planned = false;
        for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
            std::string failure;
            if ((planned = plan_from(mode, graph, *out, failure))) break;
            failures += (failures.empty() ? "" : "; ") + failure;
        }
        if (!planned) {
            why = failures;
            return nullptr;
        }
        out->owned = std::move(owned_);
        for (CudnnDesc& op : ops_) out->descs.push_back(std::move(op));
        out->descs.push_back(std::move(graph));
        return out;
    }

private:
    // The first engine config of cuDNN's heuristics in `mode` whose execution plan finalizes, into out.plan (its
    // heuristics and configs kept in out.descs); false with what failed otherwise.
    bool plan_from(cudnnBackendHeurMode_t mode, const CudnnDesc& graph, SdpaPlan& out, std::string& failure) {
        const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "fallback heuristics";
        CudnnError err;
        CudnnDesc heur(api_, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics", err);
        heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
        heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
        heur.finalize();
        int64_t count = 0;
        if (!err.failed())
            err.check(api_,
                      api_.get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                         &count, nullptr),
                      "heuristics: the number of engine configs");
        if (!err.failed() && count == 0) err.what = "no engine for the graph";
        std::vector<CudnnDesc> configs;
        for (int64_t i = 0; i < count && !err.failed(); ++i)
            configs.emplace_back(api_, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config", err);
        if (!err.failed()) {
            std::vector<cudnnBackendDescriptor_t> cfg_handles;
            for (const CudnnDesc& c : configs) cfg_handles.push_back(c.get());
            int64_t got = 0;
            err.check(api_,
                      api_.get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         count, &got, cfg_handles.data()),
                      "heuristics: the engine configs");
            count = std::min(count, got);
        }
        if (err.failed()) {
            failure = fmt::format("{}: {}", mode_name, err.what);
            return false;
        }
        // cuDNN ranks them: the first that finalizes.
        std::string first_failure;
        for (int64_t i = 0; i < count; ++i) {
            CudnnError attempt;
            CudnnDesc plan(api_, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan", attempt);
            plan.set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[size_t(i)]);
            plan.finalize();
            int64_t n = 0;
            if (!attempt.failed())
                attempt.check(api_,
                              api_.get_attribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                 1, &n, &out.workspace_bytes),
                              "execution plan: workspace size");
            if (attempt.failed()) {
                if (first_failure.empty()) first_failure = attempt.what;
                continue;
            }
            out.plan = std::move(plan);
            out.descs.push_back(std::move(heur));
            for (CudnnDesc& c : configs) out.descs.push_back(std::move(c));
            return true;
        }
        failure = fmt::format("{}: none of its {} engine configs finalizes ({})", mode_name, count, first_failure);
        return false;
    }

    int64_t next_virtual() { return next_virtual_++; }

    const CudnnDesc& tensor(int64_t uid, cudnnDataType_t dtype, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& strides, bool is_virtual = false, bool by_value = false,
                            const CudnnDesc* ragged = nullptr) {
        CudnnDesc t(api_, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor", err_);
        t.set_dtype(CUDNN_ATTR_TENSOR_DATA_TYPE, dtype)
            .set_i64(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
            .set_i64(CUDNN_ATTR_TENSOR_STRIDES, strides)
            .set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid})
            .set_i64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, {16});
        if (is_virtual) t.set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, true);
        if (by_value) t.set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true);
        if (ragged != nullptr) t.set_desc(CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, *ragged);
        t.finalize();
        owned_.push_back(std::make_unique<CudnnDesc>(std::move(t)));
        return *owned_.back();
    }

    // y = mode(x[, b][, t]) in `prec`; `axis` for GEN_INDEX.
    CudnnDesc pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, const CudnnDesc& x, const CudnnDesc* b,
                        const CudnnDesc* t, const CudnnDesc& y, int64_t axis = -1) {
        CudnnDesc pw(api_, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise", err_);
        pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
            .set_dtype(CUDNN_ATTR_POINTWISE_MATH_PREC, prec);
        if (axis >= 0) pw.set_i64(CUDNN_ATTR_POINTWISE_AXIS, {axis});
        pw.finalize();
        CudnnDesc op(api_, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation", err_);
        op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw).set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
        if (b != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
        if (t != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
        op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y).finalize();
        keep(std::move(pw));
        return op;
    }

    CudnnDesc reduction(cudnnReduceTensorOp_t op_kind, const CudnnDesc& x, const CudnnDesc& y) {
        CudnnDesc r(api_, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction", err_);
        r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op_kind)
            .set_dtype(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
        if (api_.version >= 91100) r.set_bool(CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, false);
        r.finalize();
        CudnnDesc op(api_, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation", err_);
        op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
            .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
            .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r)
            .finalize();
        keep(std::move(r));
        return op;
    }

    CudnnDesc matmul(const CudnnDesc& a, const CudnnDesc& b, const CudnnDesc& c, const CudnnDesc* m_override,
                     const CudnnDesc* n_override, const CudnnDesc* k_override) {
        CudnnDesc mm(api_, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul", err_);
        mm.set_dtype(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
        CudnnDesc op(api_, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation", err_);
        op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
            .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
            .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
            .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
        if (m_override != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, *m_override);
        if (n_override != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, *n_override);
        if (k_override != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, *k_override);
        op.finalize();
        keep(std::move(mm));
        return op;
    }

    CudnnDesc paged_load(const CudnnDesc& container, const CudnnDesc& page_table, const CudnnDesc& seq_lens,
                         const CudnnDesc& y) {
        CudnnDesc op(api_, CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, "paged cache load", err_);
        op.set_desc(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, container)
            .set_desc(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, y)
            .set_desc(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, seq_lens)
            .set_desc(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, page_table)
            .finalize();
        return op;
    }

    void keep(CudnnDesc&& d) { owned_.push_back(std::make_unique<CudnnDesc>(std::move(d))); }

    const CudnnApi& api_;
    cudnnHandle_t handle_;
    SdpaKey k_;
    CudnnError err_;
    int64_t next_virtual_ = kFirstVirtual;
    // Tensors and the descriptors operations point to, at stable addresses while the graph is built.
    std::vector<std::unique_ptr<CudnnDesc>> owned_;
    std::vector<CudnnDesc> ops_;
    std::function<void()> deferred_v_load_;  // V's paged load, queued after the softmax as cuDNN's pattern has it
};

// One cuDNN handle per device and the plans by shape (a shape cuDNN refused keeps its reason, so it is asked once).
struct State {
    std::mutex mutex;
    std::map<int, cudnnHandle_t> handles;
    std::map<SdpaKey, std::unique_ptr<SdpaPlan>> plans;
    std::map<SdpaKey, std::string> refused;
    std::set<SdpaKey> families;  // the keys of steps run, b and s_q 0: what cudnn_attention_build_buckets builds for
};

State& state() {
    static State* s = new State();  // never destroyed: plans may outlive static destruction order
    return *s;
}

// The device's handle (created on first use; st.mutex held), or nullptr with why.
cudnnHandle_t handle_of(State& st, const CudnnApi& api, int device, std::string& why) {
    auto it = st.handles.find(device);
    if (it == st.handles.end()) {
        cudnnHandle_t handle = nullptr;
        const cudnnStatus_t status = api.create(&handle);
        if (status != CUDNN_STATUS_SUCCESS) {
            why = "cudnnCreate: " + cudnn_status_text(api, status);
            return nullptr;
        }
        it = st.handles.emplace(device, handle).first;
    }
    return it->second;
}

cudnnDataType_t cudnn_dtype(DType dtype) { return dtype == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }

// The plan key of a shape on the current device.
SdpaKey key_of(int64_t b, int64_t s_q, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t num_blocks,
               int64_t block_size, int64_t max_blocks, DType dtype, cudaStream_t stream = nullptr) {
    SdpaKey key;
    TACO_CUDA_CHECK(cudaGetDevice(&key.device));
    key.b = b;
    key.s_q = s_q;
    key.h = heads;
    key.h_kv = kv_heads;
    key.d = head_dim;
    key.num_blocks = num_blocks;
    key.block_size = block_size;
    key.max_blocks = max_blocks;
    key.dtype = cudnn_dtype(dtype);
    key.stream = reinterpret_cast<uintptr_t>(stream);
    return key;
}

// The plan of the first of cudnn_attention_variants() cuDNN has an engine for, with its device buffers; nullptr with
// each form's failure in `why`.
// A plan cuDNN has but the device memory for its buffers is missing sets *retry (the shape is not refused for good).
std::unique_ptr<SdpaPlan> build_plan(const CudnnApi& api, cudnnHandle_t handle, const SdpaKey& key, cudaStream_t stream,
                                     std::string& why, bool* retry) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<SdpaPlan> plan;
    std::string failures;
    for (const SdpaGraphVariant& v : cudnn_attention_variants()) {
        std::string failure;
        plan = GraphBuilder(api, handle, key).build(v, failure);
        if (plan != nullptr) {
            plan->variant = v;
            break;
        }
        failures += fmt::format("{}[{}] {}", failures.empty() ? "" : "; ", v.name(), failure);
    }
    if (plan == nullptr) {
        why = failures;
        return nullptr;
    }
    // The workspace, then the per-step inputs (SdpaPlan::workspace), each 16-byte aligned.
    const auto aligned = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
    const size_t b = size_t(key.b), ws = aligned(size_t(plan->workspace_bytes));
    const size_t ragged_bytes = aligned((b + 1) * 8), ragged_i32_bytes = aligned((b + 1) * 4),
                 lens_bytes = aligned(b * 4);
    const size_t table_bytes = b * size_t(key.max_blocks) * 4;
    const size_t bytes = ws + ragged_bytes + ragged_i32_bytes + 2 * lens_bytes + table_bytes;
    if (cudaMalloc(&plan->workspace, bytes) != cudaSuccess) {
        cudaGetLastError();
        plan->workspace = nullptr;
        why = fmt::format("no device memory for its {} bytes of workspace", bytes);
        *retry = true;
        return nullptr;
    }
    char* at = static_cast<char*>(plan->workspace) + ws;
    plan->ragged = reinterpret_cast<int64_t*>(at);
    plan->ragged_i32 = reinterpret_cast<int32_t*>(at += ragged_bytes);
    plan->seq_len_q = reinterpret_cast<int32_t*>(at += ragged_i32_bytes);
    plan->seq_len_kv = reinterpret_cast<int32_t*>(at += lens_bytes);
    plan->page_table = reinterpret_cast<int32_t*>(at += lens_bytes);
    // Block 0 in every row a step has not written (the padding sequences' rows are never read: they have no keys).
    TACO_CUDA_CHECK(cudaMemsetAsync(plan->page_table, 0, table_bytes, stream));
    plan->build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return plan;
}

// The plan of `key`, built on first use (st.mutex held; the handle on `stream`); nullptr with why where cuDNN has none
// (kept in st.refused, so it is asked once).
SdpaPlan* plan_of(State& st, const CudnnApi& api, cudnnHandle_t handle, const SdpaKey& key, cudaStream_t stream,
                  std::string& why) {
    if (auto it = st.plans.find(key); it != st.plans.end()) return it->second.get();
    if (auto it = st.refused.find(key); it != st.refused.end()) {
        why = it->second;
        return nullptr;
    }
    bool retry = false;
    std::unique_ptr<SdpaPlan> plan = build_plan(api, handle, key, stream, why, &retry);
    if (plan == nullptr) {
        why = fmt::format("cuDNN attention (b={}, s_q={}, cache of {} blocks of {}, {} / {} heads, d={}): {}", key.b,
                          key.s_q, key.num_blocks, key.block_size, key.h, key.h_kv, key.d, why);
        if (retry) return nullptr;  // asked again at the next step of the shape
        log_info("{}; its steps run on our own kernel", why);
        st.refused.emplace(key, why);
        return nullptr;
    }
    log_debug("cuDNN attention: plan for b={} s_q={} ({}) built in {:.1f} ms", key.b, key.s_q, plan->variant.name(),
              plan->build_ms);
    return st.plans.emplace(key, std::move(plan)).first->second.get();
}

}  // namespace

std::string SdpaGraphVariant::name() const {
    std::string n = kv == Kv::kPagedNhd ? "paged NHD" : kv == Kv::kPagedHnd ? "paged HND" : "dense K/V";
    n += ragged_q ? (ragged_i64 ? ", ragged Q/O (int64)" : ", ragged Q/O (int32)") : ", padded Q/O";
    if (!stats) n += ", no stats";
    n += padding ? ", padding mask" : ", no padding mask";
    n += causal ? (padding ? ", bottom-right causal" : ", top-left causal") : ", not causal";
    if (causal && causal_int_index) n += " (int32 index)";
    return n;
}

std::vector<SdpaGraphVariant> cudnn_attention_variants() {
    SdpaGraphVariant base;
    SdpaGraphVariant i32 = base, no_stats = base, int_index = base;
    i32.ragged_i64 = false;
    no_stats.stats = false;
    int_index.causal_int_index = true;
    return {base, i32, no_stats, int_index};
}

std::vector<SdpaGraphVariant> cudnn_attention_probe_variants() {
    using Kv = SdpaGraphVariant::Kv;
    SdpaGraphVariant hnd, dense_ragged, dense_padded, dense_top_left, dense_plain;
    hnd.kv = Kv::kPagedHnd;
    dense_ragged.kv = Kv::kDense;
    dense_padded.kv = Kv::kDense;
    dense_padded.ragged_q = false;
    dense_top_left.kv = Kv::kDense;
    dense_top_left.ragged_q = false;
    dense_top_left.padding = false;
    dense_plain = dense_top_left;
    dense_plain.causal = false;
    SdpaGraphVariant nhd_padded, hnd_padded;
    nhd_padded.ragged_q = false;
    hnd_padded.kv = Kv::kPagedHnd;
    hnd_padded.ragged_q = false;
    std::vector<SdpaGraphVariant> all = cudnn_attention_variants();
    all.insert(all.end(), {hnd, nhd_padded, hnd_padded, dense_ragged, dense_padded, dense_top_left, dense_plain});
    return all;
}

std::string cudnn_attention_probe(const SdpaGraphVariant& variant, int64_t b, int64_t s_q, int64_t heads,
                                  int64_t kv_heads, int64_t head_dim, int64_t num_blocks, int64_t block_size,
                                  int64_t max_blocks, DType dtype, double* build_ms) {
    std::string why;
    const CudnnApi* api = cudnn_api(&why);
    if (api == nullptr) return why;
    const SdpaKey key = key_of(b, s_q, heads, kv_heads, head_dim, num_blocks, block_size, max_blocks, dtype);
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    cudnnHandle_t handle = handle_of(st, *api, key.device, why);
    if (handle == nullptr) return why;
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<SdpaPlan> plan = GraphBuilder(*api, handle, key).build(variant, why);
    if (build_ms != nullptr)
        *build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return plan != nullptr ? std::string() : fmt::format("cuDNN {}: {}", api->version, why);
}

namespace {}  // namespace

std::string cudnn_attention_unavailable() {
    std::string why;
    return cudnn_api(&why) != nullptr ? std::string() : why;
}

int64_t cudnn_attention_query_bucket(int64_t max_query_len) {
    int64_t bucket = 64;
    while (bucket < max_query_len) bucket *= 2;
    return bucket;
}

int64_t cudnn_attention_batch_bucket(int64_t num_seqs) {
    int64_t bucket = 1;
    while (bucket < num_seqs) bucket *= 2;
    return bucket;
}

std::string cudnn_paged_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache,
                                  const TensorView& v_cache, const ops::AttentionMetadata& batch,
                                  const ops::AttentionParams& params, const TensorView& out) {
    std::string why;
    const CudnnApi* api = cudnn_api(&why);
    if (api == nullptr) return why;
    if (q.dtype != DType::kBF16 && q.dtype != DType::kF16) return "cuDNN attention takes bf16 or f16 only";
    if (k_cache.dtype != q.dtype) return "cuDNN attention needs the cache in q's dtype";
    if (params.sliding_window > 0 || params.logit_softcap != 0 || params.alibi_slopes.ndim > 0 ||
        params.alibi_bf16_key_positions)
        return "cuDNN attention has no sliding window, soft-capping or ALiBi here";
    const int64_t d = q.shape[2];
    if (d % 8 != 0 || d > 256) return fmt::format("cuDNN attention: head dim {} (a multiple of 8 up to 256)", d);
    for (const TensorView* t : {&q, &out, &k_cache, &v_cache})
        if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) return "cuDNN attention needs 16-byte aligned operands";

    const int64_t num_seqs = batch.seq_lens.shape[0];
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    const SdpaKey key =
        key_of(cudnn_attention_batch_bucket(num_seqs), cudnn_attention_query_bucket(batch.max_query_len), q.shape[1],
               k_cache.shape[2], d, k_cache.shape[0], k_cache.shape[1], batch.block_tables.shape[1], q.dtype, stream);

    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    if (auto it = st.refused.find(key); it != st.refused.end()) return it->second;
    cudnnHandle_t handle = handle_of(st, *api, key.device, why);
    if (handle == nullptr) return why;
    if (const cudnnStatus_t status = api->set_stream(handle, stream); status != CUDNN_STATUS_SUCCESS)
        return "cudnnSetStream: " + cudnn_status_text(*api, status);

    SdpaKey family = key;
    family.b = family.s_q = 0;
    st.families.insert(family);
    SdpaPlan* found = plan_of(st, *api, handle, key, stream, why);
    if (found == nullptr) return why;
    SdpaPlan& plan = *found;
    if (!plan.variant.ragged_i64 && q.shape[0] * key.h * key.d > std::numeric_limits<int32_t>::max())
        return fmt::format("cuDNN attention: {} query rows overflow its plan's int32 offsets", q.shape[0]);

    launch_cudnn_attention_prep(static_cast<const int32_t*>(batch.query_start.data),
                                static_cast<const int32_t*>(batch.seq_lens.data), num_seqs, key.b, key.h * key.d,
                                plan.seq_len_q, plan.seq_len_kv, plan.ragged, plan.ragged_i32, stream);
    // The page table: the step's own where it has the bucket's rows, else its rows copied into the plan's.
    void* page_table = batch.block_tables.data;
    if (num_seqs < key.b) {
        // Only the columns of the step's longest sequence: a row's keys past it are never read.
        const int64_t cols =
            std::min(key.max_blocks, (int64_t(batch.max_seq_len) + key.block_size - 1) / key.block_size);
        const size_t pitch = size_t(key.max_blocks) * 4;
        TACO_CUDA_CHECK(cudaMemcpy2DAsync(plan.page_table, pitch, batch.block_tables.data, pitch, size_t(cols) * 4,
                                          size_t(num_seqs), cudaMemcpyDeviceToDevice, stream));
        page_table = plan.page_table;
    }
    void* ragged = plan.variant.ragged_i64 ? static_cast<void*>(plan.ragged) : static_cast<void*>(plan.ragged_i32);
    float scale = params.scale;
    float neg_inf = -std::numeric_limits<float>::infinity();
    const int64_t uids[] = {kQ,          kK,          kV,       kO,       kSeqLenQ, kSeqLenKv,
                            kPageTableK, kPageTableV, kRaggedQ, kRaggedO, kScale,   kNegInf};
    void* pointers[] = {q.data,     k_cache.data, v_cache.data, out.data, plan.seq_len_q, plan.seq_len_kv,
                        page_table, page_table,   ragged,       ragged,   &scale,         &neg_inf};
    CudnnError err;
    CudnnDesc pack(*api, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack", err);
    void* workspace = plan.workspace;
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(std::size(uids)), uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(std::size(pointers)), pointers)
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
        .finalize();
    if (!err.failed()) err.check(*api, api->execute(handle, plan.plan.get(), pack.get()), "cudnnBackendExecute");
    // A failed execute after a queued prep kernel leaves nothing wrong behind: the prep writes only the plan's own
    // buffers, and the caller's kernel then writes every row of out.
    return err.what;
}

CudnnPlanCounts cudnn_attention_plan_counts() {
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    return {int64_t(st.plans.size()), int64_t(st.refused.size())};
}

int64_t cudnn_attention_build_buckets(int64_t max_num_seqs, int64_t max_num_tokens, int64_t max_model_len,
                                      int64_t min_query_len, int64_t num_blocks, void* stream) {
    std::string why;
    const CudnnApi* api = cudnn_api(&why);
    if (api == nullptr) return 0;
    int device = 0;
    TACO_CUDA_CHECK(cudaGetDevice(&device));
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    cudnnHandle_t handle = handle_of(st, *api, device, why);
    if (handle == nullptr) return 0;
    const auto s = static_cast<cudaStream_t>(stream);
    if (api->set_stream(handle, s) != CUDNN_STATUS_SUCCESS) return 0;
    int64_t built = 0;
    const int64_t first_bucket = cudnn_attention_query_bucket(min_query_len);
    for (const SdpaKey& family : st.families) {
        if (family.device != device || family.num_blocks != num_blocks ||
            family.stream != reinterpret_cast<uintptr_t>(stream))
            continue;
        for (int64_t b = 1; b <= cudnn_attention_batch_bucket(max_num_seqs); b *= 2) {
            for (int64_t s_q = first_bucket; s_q <= cudnn_attention_query_bucket(max_num_tokens); s_q *= 2) {
                // The fewest tokens of a step in these buckets: its longest chunk the bucket's shortest, and b / 2 + 1
                // sequences (b / 2 or fewer take the bucket below), the others one token each.
                const int64_t longest = s_q == first_bucket ? min_query_len : s_q / 2 + 1;
                if (longest + b / 2 > max_num_tokens || longest > max_model_len) continue;
                SdpaKey key = family;
                key.b = b;
                key.s_q = s_q;
                if (st.plans.count(key) != 0 || st.refused.count(key) != 0) continue;
                if (plan_of(st, *api, handle, key, s, why) != nullptr) ++built;
            }
        }
    }
    return built;
}

}  // namespace taco::cuda
