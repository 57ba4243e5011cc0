// The backend parity harness (as llama.cpp's test-backend-ops): a table of op cases, each run on a backend under
// test and on the scalar reference (reference_ops.h), compared with one error bound per op.
//
// A case builds its inputs on the host in the backend's activation dtype (so both sides see the same rounded
// values), copies them to the backend (ParityRun::device; ops::copy on the backend's context, a plain host copy on
// the CPU), runs the op there, reads the outputs back and compares them with the reference:
//   - float outputs: the error of each row (the last dim) is max_i |got_i - want_i| / max_i |want_i|, in units of
//     the machine epsilon of the output's dtype (2^-23 for f32, 2^-10 for f16, 2^-7 for bf16); the case's error is
//     the largest over its rows and must not exceed the op's bound (0: the same values exactly). Scaling by the
//     row's magnitude keeps the bound independent of the data's scale and of cancellation inside one element,
//     while a wrong, missing (outputs start as NaN) or stray element still fails by orders of magnitude;
//   - integer outputs (expert ids, the expert sort) must be equal.
// Every measured error is printed, so a run of the harness is also the record of the backend's accuracy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/exec_context.h"
#include "reference_ops.h"

namespace taco::parity {

// The backend under test: the context its ops run on and the activation dtype they take.
struct ParityBackend {
    std::string name;  // "cpu_f32": a gtest name part
    ExecContext ctx;
    DType act_dtype = DType::kF32;
    std::function<void()> synchronize;  // waits for ctx.stream's work (CUDA); empty: nothing to wait for
    std::shared_ptr<void> resources;    // what ctx points into (a CUDA stream, its scratch), alive with the backend
    std::string unavailable;            // not empty: the backend cannot run here (no GPU), the test skips saying why
};

// The CPU backend with f32 activations.
ParityBackend cpu_f32_backend();

// A backend as a test parameter: made when its test starts (a CUDA backend creates its stream then), printed by name.
struct BackendMaker {
    const char* name;
    ParityBackend (*make)();
};
inline void PrintTo(const BackendMaker& b, std::ostream* os) { *os << b.name; }
constexpr BackendMaker kCpuF32{"cpu_f32", cpu_f32_backend};

#ifdef TACO_WITH_CUDA
// The CUDA backend with f32, bf16 or f16 activations on device 0: its own stream and a device scratch workspace.
ParityBackend cuda_f32_backend();
ParityBackend cuda_bf16_backend();
ParityBackend cuda_f16_backend();
constexpr BackendMaker kCudaF32{"cuda_f32", cuda_f32_backend};
constexpr BackendMaker kCudaBF16{"cuda_bf16", cuda_bf16_backend};
constexpr BackendMaker kCudaF16{"cuda_f16", cuda_f16_backend};
#endif

// "f32", "bf16", ...: for case names.
std::string lower_dtype_name(DType dtype);

// Machine epsilon of a float dtype.
double dtype_epsilon(DType dtype);

// The error of `got` against `want` as the harness measures it (above), rows of `row_len` elements, in epsilons
// of `dtype`; where it is largest in *worst (flattened index) when given.
double scaled_error_epsilons(const ref::Values& got, const ref::Values& want, int64_t row_len, DType dtype,
                             int64_t* worst = nullptr);

// One case on one backend: the tensors it made (kept alive until the case ends), its random numbers and its checks.
class ParityRun {
public:
    ParityRun(const ParityBackend& backend, std::string label, double bound_epsilons, uint32_t seed);

    const ExecContext& ctx() const { return backend_.ctx; }
    DType act() const { return backend_.act_dtype; }

    // Uniform in [lo, hi); uniform integer in [lo, hi].
    double uniform(double lo, double hi);
    int64_t uniform_int(int64_t lo, int64_t hi);
    std::mt19937& rng() { return rng_; }

    // Host tensors, contiguous.
    TensorView host_values(std::initializer_list<int64_t> dims, DType dtype, const ref::Values& values);
    TensorView host_random(std::initializer_list<int64_t> dims, DType dtype, double lo, double hi);
    TensorView host_act(std::initializer_list<int64_t> dims, double lo = -1, double hi = 1) {
        return host_random(dims, act(), lo, hi);
    }
    // FP8 (f8e4m3, f8e5m2): uniformly random finite bit patterns.
    TensorView host_random_fp8(std::initializer_list<int64_t> dims, DType dtype);
    TensorView host_i32(std::initializer_list<int64_t> dims, const std::vector<int32_t>& values);
    TensorView host_i64(std::initializer_list<int64_t> dims, const std::vector<int64_t>& values);

    // A copy of a contiguous host tensor on the backend's device.
    TensorView device(const TensorView& host);
    // An output buffer on the device: floats start as NaN, integers as -77, so what an op leaves unwritten shows.
    TensorView device_output(std::initializer_list<int64_t> dims, DType dtype);

    // A device tensor read back to the host: as it is, as doubles, as integers.
    Tensor host_copy(const TensorView& device_view);
    ref::Values read(const TensorView& device_view);
    std::vector<int32_t> read_i32(const TensorView& device_view);

    // Compares a float output with the reference under the op's bound (rows of the output's last dim).
    void expect_close(const std::string& what, const TensorView& got_device, const ref::Values& want);
    void expect_close_host(const std::string& what, const ref::Values& got, const ref::Values& want, int64_t row_len,
                           DType dtype);
    void expect_equal(const std::string& what, const std::vector<int32_t>& got, const std::vector<int32_t>& want);

    double max_error_epsilons() const { return max_error_; }

private:
    TensorView keep(Tensor t);

    const ParityBackend& backend_;
    std::string label_;
    double bound_;
    std::mt19937 rng_;
    std::vector<Tensor> tensors_;
    double max_error_ = 0;
};

struct ParityCase {
    std::string name;  // "m1_n7_k33": a gtest name part
    std::function<void(ParityRun&)> run;
};

// One CTest entry: an op over a family of shapes and parameters.
struct CaseGroup {
    std::string op;    // as ops.h names it
    std::string name;  // "f16_weights"
    std::vector<ParityCase> cases;
};

// The table, by family (parity_cases_*.cc).
std::vector<CaseGroup> dense_case_groups();
std::vector<CaseGroup> attention_case_groups();
std::vector<CaseGroup> moe_case_groups();

// The op's one error bound in epsilons of its output dtype (op_parity_test.cc); aborts on an op it lacks.
double op_bound_epsilons(const std::string& op);

}  // namespace taco::parity
