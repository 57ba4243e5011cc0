// Parity cases of the dense ops: matmul, lookups and copies, norms, elementwise ops and activations.
#include <cstdio>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/ops.h"
#include "parity_harness.h"

namespace taco::parity {
namespace {

using ops::Activation;

const char* activation_name(Activation act) {
    switch (act) {
        case Activation::kSilu: return "silu";
        case Activation::kGeluTanh: return "gelu_tanh";
        case Activation::kGeluErf: return "gelu_erf";
        case Activation::kRelu: return "relu";
        case Activation::kRelu2: return "relu2";
    }
    return "?";
}

constexpr Activation kActivations[] = {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf,
                                       Activation::kRelu, Activation::kRelu2};

// Whether the backend takes weights of w_dtype with its activations: the CPU keeps weights in their on-disk dtype,
// CUDA takes them in the activation dtype only (the loader converts them; a mix aborts, tests/cuda checks that).
bool weights_supported(ParityRun& r, DType w_dtype) {
    if (r.ctx().device == Device::kCpu || w_dtype == r.act()) return true;
    std::printf("[ parity   ] not run: %s weights with %s activations are a CPU-only combination\n",
                lower_dtype_name(w_dtype).c_str(), lower_dtype_name(r.act()).c_str());
    return false;
}

// y [M, N] = x [M, K] . w [N, K]^T (+ bias): one row, odd sizes, K below, at and past multiples of 16.
CaseGroup matmul_group(DType w_dtype) {
    struct Shape {
        int64_t m, n, k;
        bool bias;
    };
    const Shape shapes[] = {{1, 1, 1, false},    {1, 7, 33, true},    {3, 5, 15, false},
                            {4, 16, 16, true},   {7, 13, 100, false}, {17, 9, 257, true},
                            {33, 34, 64, false}, {2, 3, 1000, true},  {5, 64, 4100, false}};
    CaseGroup group{"matmul", lower_dtype_name(w_dtype) + "_weights", {}};
    for (const Shape& s : shapes) {
        group.cases.push_back({fmt::format("m{}_n{}_k{}{}", s.m, s.n, s.k, s.bias ? "_bias" : ""), [=](ParityRun& r) {
                                   if (!weights_supported(r, w_dtype)) return;
                                   TensorView x = r.host_act({s.m, s.k});
                                   TensorView w = r.host_random({s.n, s.k}, w_dtype, -1, 1);
                                   TensorView bias = r.host_random({s.n}, DType::kF32, -1, 1);
                                   TensorView y = r.device_output({s.m, s.n}, r.act());
                                   TensorView device_bias = r.device(bias);
                                   ops::matmul(r.ctx(), r.device(x), r.device(w), s.bias ? &device_bias : nullptr, y);
                                   r.expect_close("y", y, ref::matmul(x, w, s.bias ? &bias : nullptr));
                               }});
    }
    return group;
}

// f32 y from activations and weights in the activation dtype: the lm_head's and the MoE router's logits (bf16 hidden
// states into f32 logits on CUDA), with lm_head-like widths and an odd vocabulary.
CaseGroup matmul_f32_output_group() {
    struct Shape {
        int64_t m, n, k;
        bool bias;
    };
    CaseGroup group{"matmul", "f32_output", {}};
    for (const Shape& s : {Shape{1, 512, 64, false}, {7, 509, 64, true}, {3, 1000, 256, false}, {16, 8, 64, false}}) {
        group.cases.push_back({fmt::format("m{}_n{}_k{}{}", s.m, s.n, s.k, s.bias ? "_bias" : ""), [=](ParityRun& r) {
                                   TensorView x = r.host_act({s.m, s.k});
                                   TensorView w = r.host_act({s.n, s.k});
                                   TensorView bias = r.host_random({s.n}, DType::kF32, -1, 1);
                                   TensorView y = r.device_output({s.m, s.n}, DType::kF32);
                                   TensorView device_bias = r.device(bias);
                                   ops::matmul(r.ctx(), r.device(x), r.device(w), s.bias ? &device_bias : nullptr, y);
                                   r.expect_close("y", y, ref::matmul(x, w, s.bias ? &bias : nullptr));
                               }});
    }
    return group;
}

std::vector<int32_t> random_ids(ParityRun& r, int64_t count, int64_t limit) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < count; ++i) ids.push_back(int32_t(r.uniform_int(0, limit - 1)));
    if (count >= 3) ids[0] = 0, ids[1] = int32_t(limit - 1), ids[2] = int32_t(limit - 1);  // both ends, a repeat
    return ids;
}

CaseGroup embedding_group(DType table_dtype) {
    CaseGroup group{"embedding", lower_dtype_name(table_dtype) + "_table", {}};
    for (auto [tokens, vocab, hidden] : {std::array<int64_t, 3>{1, 5, 8}, {7, 50, 33}, {20, 300, 64}}) {
        group.cases.push_back({fmt::format("t{}_v{}_h{}", tokens, vocab, hidden), [=](ParityRun& r) {
                                   // FP8 values are exact in every activation dtype.
                                   TensorView table = dtype_size_bytes(table_dtype) == 1
                                                          ? r.host_random_fp8({vocab, hidden}, table_dtype)
                                                          : r.host_random({vocab, hidden}, table_dtype, -2, 2);
                                   TensorView ids = r.host_i32({tokens}, random_ids(r, tokens, vocab));
                                   TensorView out = r.device_output({tokens, hidden}, r.act());
                                   ops::embedding(r.ctx(), r.device(ids), r.device(table), out);
                                   r.expect_close("out", out, ref::embedding(ids, table));
                               }});
    }
    return group;
}

CaseGroup gather_rows_group() {
    CaseGroup group{"gather_rows", "rows", {}};
    for (auto [rows, src_rows, hidden] : {std::array<int64_t, 3>{1, 1, 5}, {4, 9, 17}, {12, 5, 64}}) {
        group.cases.push_back({fmt::format("r{}_of_{}_h{}", rows, src_rows, hidden), [=](ParityRun& r) {
                                   TensorView src = r.host_act({src_rows, hidden});
                                   TensorView indices = r.host_i32({rows}, random_ids(r, rows, src_rows));
                                   TensorView out = r.device_output({rows, hidden}, r.act());
                                   ops::gather_rows(r.ctx(), r.device(src), r.device(indices), out);
                                   r.expect_close("out", out, ref::gather_rows(src, indices));
                               }});
    }
    return group;
}

CaseGroup copy_group() {
    CaseGroup group{"copy", "dtypes", {}};
    group.cases.push_back({"act_reshaped", [](ParityRun& r) {
                               TensorView src = r.host_act({5, 7});
                               TensorView dst = r.device_output({35}, r.act());
                               ops::copy(r.ctx(), r.device(src), dst);
                               r.expect_close("dst", dst, ref::copy(src));
                           }});
    group.cases.push_back({"bf16", [](ParityRun& r) {
                               TensorView src = r.host_random({3, 4}, DType::kBF16, -5, 5);
                               TensorView dst = r.device_output({3, 4}, DType::kBF16);
                               ops::copy(r.ctx(), r.device(src), dst);
                               r.expect_close("dst", dst, ref::copy(src));
                           }});
    group.cases.push_back({"i32", [](ParityRun& r) {
                               const std::vector<int32_t> values = {7, -1, 0, 2147483647, -2147483647 - 1, 42};
                               TensorView dst = r.device_output({2, 3}, DType::kI32);
                               ops::copy(r.ctx(), r.device(r.host_i32({6}, values)), dst);
                               r.expect_equal("dst", r.read_i32(dst), values);
                           }});
    group.cases.push_back({"rectangle_of_rows", [](ParityRun& r) {
                               // Rows [0, 3) x columns [0, 6) of a [4, 10] host table into the same place of a
                               // device one (ForwardExecutor's block-table upload); the rest stays as it was.
                               std::vector<int32_t> values(40), want(40, 0);
                               for (int i = 0; i < 40; ++i) values[size_t(i)] = i + 1;
                               for (int row = 0; row < 3; ++row)
                                   for (int col = 0; col < 6; ++col) want[size_t(row * 10 + col)] = row * 10 + col + 1;
                               TensorView dst = r.device_output({4, 10}, DType::kI32);
                               ops::copy(r.ctx(), r.device(r.host_i32({40}, std::vector<int32_t>(40, 0))),
                                         dst.reshape({40}));
                               const TensorView src = r.host_i32({4, 10}, values);
                               ops::copy(r.ctx(), src.rows(0, 3).slice(1, 0, 6), dst.rows(0, 3).slice(1, 0, 6));
                               r.expect_equal("dst", r.read_i32(dst), want);
                           }});
    return group;
}

CaseGroup rms_norm_group() {
    struct Shape {
        int64_t tokens, hidden;
        float eps, weight_offset;
    };
    CaseGroup group{"rms_norm", "shapes", {}};
    for (Shape s : {Shape{1, 1, 1e-6f, 0},
                    {1, 64, 1e-6f, 0},
                    {3, 17, 1e-5f, 1},
                    {5, 255, 1e-6f, 0},
                    {2, 1024, 1e-5f, 1},
                    {1, 4096, 1e-5f, 0},
                    {2, 8200, 1e-6f, 0},
                    {1, 20000, 1e-6f, 1}}) {
        group.cases.push_back({fmt::format("t{}_h{}_offset{}", s.tokens, s.hidden, s.weight_offset), [=](ParityRun& r) {
                                   TensorView x = r.host_act({s.tokens, s.hidden}, -3, 3);
                                   TensorView w = r.host_random({s.hidden}, DType::kF32, -1, 1);
                                   TensorView out = r.device_output({s.tokens, s.hidden}, r.act());
                                   ops::rms_norm(r.ctx(), r.device(x), r.device(w), s.eps, s.weight_offset, out);
                                   r.expect_close("out", out, ref::rms_norm(x, w, s.eps, s.weight_offset));
                               }});
    }
    return group;
}

// The residual add then RMSNorm in one op: x is the rounded sum, out the norm of that sum. Rows of lengths the vector
// build takes (multiples of 8, up to 4 pieces per thread) and the scalar build (255, and 100 for 2-byte dtypes).
CaseGroup add_rms_norm_group() {
    CaseGroup group{"add_rms_norm", "shapes", {}};
    for (auto [tokens, hidden] :
         {std::array<int64_t, 2>{1, 1}, {1, 4096}, {3, 100}, {2, 255}, {4, 1024}, {2, 16384}, {1, 20000}}) {
        group.cases.push_back({fmt::format("t{}_h{}", tokens, hidden), [=](ParityRun& r) {
                                   TensorView x = r.host_act({tokens, hidden}, -3, 3);
                                   TensorView y = r.host_act({tokens, hidden}, -1, 1);
                                   TensorView w = r.host_random({hidden}, DType::kF32, -1, 1);
                                   TensorView out = r.device_output({tokens, hidden}, r.act());
                                   TensorView device_x = r.device(x);
                                   ops::add_rms_norm(r.ctx(), device_x, r.device(y), r.device(w), 1e-6f, 1.0f, out);
                                   const ref::Values sum = ref::add(x, y);
                                   r.expect_close("x", device_x, sum);
                                   TensorView rounded = r.host_values({tokens, hidden}, r.act(), sum);
                                   r.expect_close("out", out, ref::rms_norm(rounded, w, 1e-6, 1.0));
                               }});
    }
    return group;
}

CaseGroup layer_norm_group() {
    CaseGroup group{"layer_norm", "shapes", {}};
    for (auto [tokens, hidden, bias] :
         {std::array<int64_t, 3>{1, 1, 1}, {1, 64, 0}, {3, 17, 1}, {4, 255, 1}, {2, 1024, 0}}) {
        group.cases.push_back({fmt::format("t{}_h{}{}", tokens, hidden, bias ? "_bias" : ""), [=](ParityRun& r) {
                                   // A mean of about 4 to take out.
                                   TensorView x = r.host_act({tokens, hidden}, 3, 5);
                                   TensorView w = r.host_random({hidden}, DType::kF32, -1, 1);
                                   TensorView b = r.host_random({hidden}, DType::kF32, -1, 1);
                                   TensorView out = r.device_output({tokens, hidden}, r.act());
                                   TensorView device_b = r.device(b);
                                   ops::layer_norm(r.ctx(), r.device(x), r.device(w), bias ? &device_b : nullptr, 1e-5f,
                                                   out);
                                   r.expect_close("out", out, ref::layer_norm(x, w, bias ? &b : nullptr, 1e-5));
                               }});
    }
    return group;
}

CaseGroup per_head_layer_norm_group() {
    CaseGroup group{"per_head_layer_norm", "shapes", {}};
    for (auto [tokens, heads, dim, bias] : {std::array<int64_t, 4>{1, 1, 8, 0}, {3, 4, 24, 1}, {5, 8, 80, 1}}) {
        group.cases.push_back(
            {fmt::format("t{}_heads{}_d{}{}", tokens, heads, dim, bias ? "_bias" : ""), [=](ParityRun& r) {
                 TensorView x = r.host_act({tokens, heads, dim}, -2, 4);
                 TensorView w = r.host_random({heads, dim}, DType::kF32, -1, 1);
                 TensorView b = r.host_random({heads, dim}, DType::kF32, -1, 1);
                 TensorView device_x = r.device(x), device_b = r.device(b);
                 ops::per_head_layer_norm(r.ctx(), device_x, r.device(w), bias ? &device_b : nullptr, 1e-5f);
                 r.expect_close("x", device_x, ref::per_head_layer_norm(x, w, bias ? &b : nullptr, 1e-5));
             }});
    }
    return group;
}

std::vector<CaseGroup> elementwise_groups() {
    CaseGroup add{"add_inplace", "shapes", {}}, scale{"scale_inplace", "factors", {}},
        softcap{"softcap_inplace", "caps", {}};
    for (auto [rows, cols] : {std::array<int64_t, 2>{1, 1}, {3, 17}, {16, 256}}) {
        add.cases.push_back({fmt::format("{}x{}", rows, cols), [=](ParityRun& r) {
                                 TensorView x = r.host_act({rows, cols}), y = r.host_act({rows, cols});
                                 TensorView device_x = r.device(x);
                                 ops::add_inplace(r.ctx(), device_x, r.device(y));
                                 r.expect_close("x", device_x, ref::add(x, y));
                             }});
    }
    for (float s : {8.0f, 0.125f, 45.254834f}) {
        scale.cases.push_back({fmt::format("s{}", int(s * 1000)), [=](ParityRun& r) {
                                   TensorView x = r.host_act({3, 5, 7});
                                   TensorView device_x = r.device(x);
                                   ops::scale_inplace(r.ctx(), device_x, s);
                                   r.expect_close("x", device_x, ref::scale(x, s));
                               }});
    }
    for (float cap : {30.0f, 50.0f}) {
        // Logits are f32 on every backend.
        softcap.cases.push_back({fmt::format("cap{}", int(cap)), [=](ParityRun& r) {
                                     TensorView x = r.host_random({4, 300}, DType::kF32, -120, 120);
                                     TensorView device_x = r.device(x);
                                     ops::softcap_inplace(r.ctx(), device_x, cap);
                                     r.expect_close("x", device_x, ref::softcap(x, cap));
                                 }});
    }
    return {add, scale, softcap};
}

CaseGroup gated_activation_group() {
    CaseGroup group{"gated_activation", "activations", {}};
    for (Activation act : kActivations) {
        for (double range : {8.0, 40.0}) {
            group.cases.push_back({fmt::format("{}_range{}", activation_name(act), int(range)), [=](ParityRun& r) {
                                       TensorView gate = r.host_act({5, 67}, -range, range);
                                       TensorView up = r.host_act({5, 67}, -2, 2);
                                       TensorView out = r.device_output({5, 67}, r.act());
                                       ops::gated_activation(r.ctx(), r.device(gate), r.device(up), act, out);
                                       r.expect_close("out", out, ref::gated_activation(gate, up, act));
                                   }});
        }
        // out aliasing gate, as the MLP calls it.
        group.cases.push_back({fmt::format("{}_in_place", activation_name(act)), [=](ParityRun& r) {
                                   TensorView gate = r.host_act({3, 40}, -6, 6), up = r.host_act({3, 40}, -2, 2);
                                   TensorView device_gate = r.device(gate);
                                   ops::gated_activation(r.ctx(), device_gate, r.device(up), act, device_gate);
                                   r.expect_close("gate", device_gate, ref::gated_activation(gate, up, act));
                               }});
    }
    return group;
}

// gated_projection against matmuls + gated_activation on the same backend: the same values (the op's contract is their
// bits, whether a backend fuses them or not), rows of 1 to 17 (the CUDA skinny GEMM's range and past it).
CaseGroup gated_projection_group() {
    struct Shape {
        int64_t m, n, k;
        bool bias;
    };
    CaseGroup group{"gated_projection", "activations", {}};
    for (const Shape& s : {Shape{1, 40, 64, false}, {5, 24, 40, true}, {16, 72, 128, false}, {17, 9, 33, true}}) {
        for (Activation act : {Activation::kSilu, Activation::kGeluTanh}) {
            const std::string name =
                fmt::format("{}_m{}_n{}_k{}{}", activation_name(act), s.m, s.n, s.k, s.bias ? "_bias" : "");
            group.cases.push_back(
                {name, [=](ParityRun& r) {
                     TensorView x = r.device(r.host_act({s.m, s.k}));
                     TensorView wg = r.device(r.host_act({s.n, s.k}));
                     TensorView wu = r.device(r.host_act({s.n, s.k}));
                     TensorView bg = r.device(r.host_random({s.n}, DType::kF32, -1, 1));
                     TensorView bu = r.device(r.host_random({s.n}, DType::kF32, -1, 1));
                     const TensorView* gate_bias = s.bias ? &bg : nullptr;
                     const TensorView* up_bias = s.bias ? &bu : nullptr;
                     TensorView gate = r.device_output({s.m, s.n}, r.act());
                     TensorView up = r.device_output({s.m, s.n}, r.act());
                     TensorView out = r.device_output({s.m, s.n}, r.act());
                     ops::gated_projection(r.ctx(), x, {&wg, gate_bias, gate}, {&wu, up_bias, up}, act, out);
                     TensorView gate2 = r.device_output({s.m, s.n}, r.act());
                     TensorView up2 = r.device_output({s.m, s.n}, r.act());
                     const ops::Projection both[] = {{&wg, gate_bias, gate2}, {&wu, up_bias, up2}};
                     ops::matmuls(r.ctx(), x, both);
                     ops::gated_activation(r.ctx(), gate2, up2, act, gate2);
                     EXPECT_EQ(r.read(out), r.read(gate2));
                 }});
        }
    }
    return group;
}

CaseGroup activation_inplace_group() {
    CaseGroup group{"activation_inplace", "activations", {}};
    for (Activation act : kActivations) {
        group.cases.push_back({activation_name(act), [=](ParityRun& r) {
                                   TensorView x = r.host_act({4, 2, 33}, -8, 8);
                                   TensorView device_x = r.device(x);
                                   ops::activation_inplace(r.ctx(), device_x, act);
                                   r.expect_close("x", device_x, ref::activation(x, act));
                               }});
    }
    return group;
}

}  // namespace

std::vector<CaseGroup> dense_case_groups() {
    std::vector<CaseGroup> groups;
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) groups.push_back(matmul_group(d));
    groups.push_back(matmul_f32_output_group());
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF8E4M3, DType::kF8E5M2})
        groups.push_back(embedding_group(d));
    groups.push_back(gather_rows_group());
    groups.push_back(copy_group());
    groups.push_back(rms_norm_group());
    groups.push_back(add_rms_norm_group());
    groups.push_back(layer_norm_group());
    groups.push_back(per_head_layer_norm_group());
    for (CaseGroup& g : elementwise_groups()) groups.push_back(std::move(g));
    groups.push_back(gated_activation_group());
    groups.push_back(gated_projection_group());
    groups.push_back(activation_inplace_group());
    return groups;
}

}  // namespace taco::parity
