// Parity cases of the mixture-of-experts ops: routing (softmax top-k with and without renormalising, sparsemixer,
// ties, padding tokens), the expert sort, gather, grouped matmul (every weight dtype, empty experts, padding rows, an
// expert stride larger than N * K), combine and the shared expert's sigmoid gate.
#include <algorithm>

#include <fmt/format.h>

#include "kernels/ops.h"
#include "parity_harness.h"

namespace taco::parity {
namespace {

struct RouteCase {
    int64_t tokens, experts;
    int top_k;
    bool renormalize;
    bool padding;           // every third token is padding (slot -1)
    bool ties;              // rows with equal logits
    bool negative = false;  // every logit below zero (sparsemixer's threshold then clamps nothing)
};

void run_route(ParityRun& r, const RouteCase& c, const ops::MoeRouteParams& params) {
    TensorView logits = r.host_random({c.tokens, c.experts}, DType::kF32, c.negative ? -6 : -4, c.negative ? -0.5 : 4);
    if (c.ties) {
        float* row = logits.as<float>();
        std::fill_n(row, c.experts, 0.5f);                                             // all equal: ids 0, 1, ...
        if (c.tokens > 1) row[c.experts + c.experts - 1] = row[c.experts + 1] = 7.0f;  // two maxima: 1 before E - 1
        if (c.tokens > 2) row[2 * c.experts + 3] = row[2 * c.experts + 2] = row[2 * c.experts + 0] = 9.0f;
    }
    std::vector<int64_t> slots;
    for (int64_t t = 0; t < c.tokens; ++t) slots.push_back(c.padding && t % 3 == 1 ? -1 : t);
    TensorView slot_mapping = c.padding ? r.host_i64({c.tokens}, slots) : TensorView();
    TensorView ids = r.device_output({c.tokens, c.top_k}, DType::kI32);
    TensorView weights = r.device_output({c.tokens, c.top_k}, DType::kF32);
    ops::moe_route(r.ctx(), r.device(logits), c.padding ? r.device(slot_mapping) : TensorView(), params, ids, weights);
    const ref::Routing want = ref::moe_route(logits, slot_mapping, params);
    r.expect_equal("ids", r.read_i32(ids), want.ids);
    r.expect_close("weights", weights, want.weights);
}

std::string describe(const RouteCase& c) {
    return fmt::format("t{}_e{}_top{}{}{}{}{}", c.tokens, c.experts, c.top_k, c.renormalize ? "_renorm" : "",
                       c.padding ? "_padding" : "", c.ties ? "_ties" : "", c.negative ? "_negative" : "");
}

CaseGroup softmax_top_k_group() {
    CaseGroup group{"moe_route", "softmax_top_k", {}};
    for (RouteCase c : {RouteCase{1, 8, 2, true, false, false},
                        {7, 8, 2, false, false, false},
                        {13, 60, 4, true, true, false},
                        {5, 16, 1, true, false, false},
                        {6, 4, 4, false, true, false},
                        {4, 8, 3, false, false, true},
                        {4, 8, 2, true, true, true}}) {
        group.cases.push_back({describe(c), [c](ParityRun& r) {
                                   ops::MoeRouteParams params;
                                   params.routing = ops::MoeRouting::kSoftmaxTopK;
                                   params.top_k = c.top_k;
                                   params.renormalize = c.renormalize;
                                   run_route(r, c, params);
                               }});
    }
    return group;
}

CaseGroup sparse_mixer_group() {
    CaseGroup group{"moe_route", "sparsemixer", {}};
    for (float eps : {0.01f, 0.1f, 0.5f}) {
        for (RouteCase c : {RouteCase{9, 16, 2, false, false, false},
                            {7, 8, 2, false, true, false},
                            {4, 8, 2, false, false, true},
                            {6, 8, 2, false, false, false, true}}) {
            group.cases.push_back({describe(c) + fmt::format("_eps{}", eps), [c, eps](ParityRun& r) {
                                       ops::MoeRouteParams params;
                                       params.routing = ops::MoeRouting::kSparseMixer;
                                       params.top_k = 2;
                                       params.sparsemixer_eps = eps;
                                       run_route(r, c, params);
                                   }});
        }
    }
    return group;
}

// ids [T, k] in [0, E], a `padding_percent` share of them E.
std::vector<int32_t> random_expert_ids(ParityRun& r, int64_t slots, int experts, int padding_percent) {
    std::vector<int32_t> ids;
    for (int64_t s = 0; s < slots; ++s)
        ids.push_back(r.uniform_int(0, 99) < padding_percent ? experts : int32_t(r.uniform_int(0, experts - 1)));
    return ids;
}

struct AlignCase {
    int64_t tokens;
    int top_k, experts, padding_percent;
};
// The last two: more slots than a block of threads (a CUDA kernel's chunks), more experts than a warp has lanes.
constexpr AlignCase kAlignCases[] = {{1, 1, 1, 0},  {9, 2, 8, 0},     {50, 4, 60, 10}, {6, 2, 4, 100},
                                     {5, 2, 3, 30}, {700, 4, 60, 10}, {300, 8, 300, 5}};

CaseGroup align_group() {
    CaseGroup group{"moe_align", "ids", {}};
    for (AlignCase c : kAlignCases) {
        group.cases.push_back(
            {fmt::format("t{}_top{}_e{}_pad{}", c.tokens, c.top_k, c.experts, c.padding_percent), [c](ParityRun& r) {
                 const int64_t slots = c.tokens * c.top_k;
                 TensorView ids =
                     r.host_i32({c.tokens, c.top_k}, random_expert_ids(r, slots, c.experts, c.padding_percent));
                 TensorView sorted = r.device_output({slots}, DType::kI32);
                 TensorView rows = r.device_output({slots}, DType::kI32);
                 TensorView offsets = r.device_output({c.experts + 1}, DType::kI32);
                 ops::moe_align(r.ctx(), r.device(ids), c.experts, sorted, rows, offsets);
                 const ref::Alignment want = ref::moe_align(ids, c.experts);
                 r.expect_equal("sorted_slots", r.read_i32(sorted), want.sorted_slots);
                 r.expect_equal("slot_rows", r.read_i32(rows), want.slot_rows);
                 r.expect_equal("expert_offsets", r.read_i32(offsets), want.expert_offsets);
             }});
    }
    return group;
}

CaseGroup gather_group() {
    CaseGroup group{"moe_gather", "rows", {}};
    for (AlignCase c : kAlignCases) {
        group.cases.push_back(
            {fmt::format("t{}_top{}_e{}_pad{}", c.tokens, c.top_k, c.experts, c.padding_percent), [c](ParityRun& r) {
                 const int64_t slots = c.tokens * c.top_k, hidden = 19;
                 TensorView ids =
                     r.host_i32({c.tokens, c.top_k}, random_expert_ids(r, slots, c.experts, c.padding_percent));
                 const ref::Alignment a = ref::moe_align(ids, c.experts);
                 TensorView x = r.host_act({c.tokens, hidden});
                 TensorView sorted = r.host_i32({slots}, a.sorted_slots);
                 TensorView offsets = r.host_i32({c.experts + 1}, a.expert_offsets);
                 TensorView out = r.device_output({slots, hidden}, r.act());
                 ops::moe_gather(r.ctx(), r.device(x), r.device(sorted), r.device(offsets), c.top_k, out);
                 r.expect_close("out", out, ref::moe_gather(x, sorted, offsets, c.top_k));
             }});
    }
    return group;
}

// Expert offsets [E + 1] splitting `ran` rows among experts at random (some empty).
std::vector<int32_t> random_offsets(ParityRun& r, int64_t experts, int64_t ran) {
    std::vector<int32_t> cuts = {0, int32_t(ran)};
    for (int64_t e = 1; e < experts; ++e) cuts.push_back(int32_t(r.uniform_int(0, ran)));
    std::sort(cuts.begin(), cuts.end());
    return cuts;
}

CaseGroup grouped_matmul_group(DType w_dtype) {
    struct Shape {
        int64_t experts, n, k, ran, padding_rows;
        bool fused;  // w is the up half of a [E, 2N, K] gate_up stack: expert stride 2 * N * K
    };
    CaseGroup group{"grouped_matmul", lower_dtype_name(w_dtype) + "_weights", {}};
    for (Shape s : {Shape{1, 1, 1, 1, 0, false},
                    {4, 7, 15, 9, 3, false},
                    {8, 16, 64, 20, 0, true},
                    {3, 33, 100, 5, 7, true},
                    {6, 5, 257, 12, 2, false},
                    // Several row and column tiles per expert, and more padding rows than one tile.
                    {3, 130, 300, 200, 5, true},
                    {2, 70, 40, 150, 70, false}}) {
        group.cases.push_back({fmt::format("e{}_n{}_k{}_rows{}_pad{}{}", s.experts, s.n, s.k, s.ran, s.padding_rows,
                                           s.fused ? "_fused_gate_up" : ""),
                               [=](ParityRun& r) {
                                   const int64_t rows = s.ran + s.padding_rows, stacked = s.fused ? 2 * s.n : s.n;
                                   TensorView x = r.host_act({rows, s.k});
                                   TensorView storage = r.host_random({s.experts, stacked, s.k}, w_dtype, -1, 1);
                                   TensorView offsets =
                                       r.host_i32({s.experts + 1}, random_offsets(r, s.experts, s.ran));
                                   TensorView w = storage.slice(1, stacked - s.n, stacked);
                                   TensorView device_w = r.device(storage).slice(1, stacked - s.n, stacked);
                                   TensorView y = r.device_output({rows, s.n}, r.act());
                                   ops::grouped_matmul(r.ctx(), r.device(x), device_w, r.device(offsets), y);
                                   r.expect_close("y", y, ref::grouped_matmul(x, w, offsets));
                               }});
    }
    return group;
}

CaseGroup combine_group() {
    CaseGroup group{"moe_combine", "tokens", {}};
    for (auto [tokens, top_k, hidden, experts] :
         {std::array<int64_t, 4>{1, 1, 8, 4}, {7, 2, 33, 8}, {12, 4, 64, 60}, {5, 8, 16, 8}}) {
        group.cases.push_back({fmt::format("t{}_top{}_h{}_e{}", tokens, top_k, hidden, experts), [=](ParityRun& r) {
                                   // ids and weights as moe_route gives them (every fourth token padding), rows as
                                   // moe_align sorts them.
                                   ops::MoeRouteParams params;
                                   params.top_k = int(top_k);
                                   std::vector<int64_t> slots;
                                   for (int64_t t = 0; t < tokens; ++t) slots.push_back(t % 4 == 3 ? -1 : t);
                                   const ref::Routing routing =
                                       ref::moe_route(r.host_random({tokens, experts}, DType::kF32, -3, 3),
                                                      r.host_i64({tokens}, slots), params);
                                   TensorView ids = r.host_i32({tokens, top_k}, routing.ids);
                                   TensorView weights = r.host_values({tokens, top_k}, DType::kF32, routing.weights);
                                   TensorView slot_rows =
                                       r.host_i32({tokens * top_k}, ref::moe_align(ids, int(experts)).slot_rows);
                                   TensorView expert_out = r.host_act({tokens * top_k, hidden}, -2, 2);
                                   TensorView out = r.device_output({tokens, hidden}, r.act());
                                   ops::moe_combine(r.ctx(), r.device(expert_out), r.device(slot_rows), r.device(ids),
                                                    r.device(weights), out);
                                   r.expect_close("out", out, ref::moe_combine(expert_out, slot_rows, ids, weights));
                               }});
    }
    return group;
}

CaseGroup add_sigmoid_gated_group() {
    CaseGroup group{"add_sigmoid_gated", "tokens", {}};
    for (auto [tokens, hidden] : {std::array<int64_t, 2>{1, 7}, {4, 33}, {9, 256}}) {
        group.cases.push_back({fmt::format("t{}_h{}", tokens, hidden), [=](ParityRun& r) {
                                   TensorView shared = r.host_act({tokens, hidden}, -2, 2);
                                   TensorView gate = r.host_act({tokens, 1}, -6, 6);
                                   TensorView out_before = r.host_act({tokens, hidden}, -2, 2);
                                   TensorView out = r.device(out_before);
                                   ops::add_sigmoid_gated(r.ctx(), r.device(shared), r.device(gate), out);
                                   r.expect_close("out", out, ref::add_sigmoid_gated(shared, gate, out_before));
                               }});
    }
    return group;
}

}  // namespace

std::vector<CaseGroup> moe_case_groups() {
    std::vector<CaseGroup> groups = {softmax_top_k_group(), sparse_mixer_group(), align_group(), gather_group()};
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) groups.push_back(grouped_matmul_group(d));
    groups.push_back(combine_group());
    groups.push_back(add_sigmoid_gated_group());
    return groups;
}

}  // namespace taco::parity
