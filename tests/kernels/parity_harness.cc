// The parity harness's runner (parity_harness.h): host tensors, copies to and from the backend, the error metric.
#include "parity_harness.h"

#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace taco::parity {
namespace {

// Element i of a contiguous host tensor set to v rounded to its dtype.
void store(const TensorView& t, int64_t i, double v) {
    switch (t.dtype) {
        case DType::kF32: t.as<float>()[i] = float(v); return;
        case DType::kF16: t.as<uint16_t>()[i] = f32_to_f16(float(v)); return;
        case DType::kBF16: t.as<uint16_t>()[i] = f32_to_bf16(float(v)); return;
        default: TACO_CHECK_MSG(false, "store into a {} tensor", dtype_name(t.dtype));
    }
}

std::span<const int64_t> dims_of(const TensorView& t) { return {t.shape.data(), size_t(t.ndim)}; }

}  // namespace

ParityBackend cpu_f32_backend() { return ParityBackend{"cpu_f32", ExecContext::cpu(), DType::kF32, {}, {}, {}}; }

#ifdef TACO_WITH_CUDA
namespace {

// What a CUDA backend's context points into.
struct CudaResources {
    std::unique_ptr<cuda::DeviceStream> stream;
    Workspace scratch{MemoryKind::kDevice};
};

constexpr size_t kCudaScratchBytes = size_t(64) << 20;  // op temporaries of one case (reset per case)

ParityBackend cuda_backend(const char* name, DType act_dtype) {
    ParityBackend backend;
    backend.name = name;
    backend.act_dtype = act_dtype;
    backend.ctx.device = Device::kCuda;
    const Status status = cuda::init_backend(0);
    if (!status.is_ok()) {
        backend.unavailable = status.message();
        return backend;
    }
    auto resources = std::make_shared<CudaResources>();
    Result<std::unique_ptr<cuda::DeviceStream>> stream = cuda::DeviceStream::create();
    TACO_CHECK_MSG(stream.is_ok(), "{}: {}", name, stream.status().message());
    resources->stream = std::move(stream).value();
    resources->scratch.reserve(kCudaScratchBytes);
    backend.ctx = resources->stream->context(&resources->scratch);
    const cuda::DeviceStream* device_stream = resources->stream.get();
    backend.synchronize = [device_stream] { device_stream->synchronize(); };
    backend.resources = std::move(resources);
    return backend;
}

}  // namespace

ParityBackend cuda_f32_backend() { return cuda_backend("cuda_f32", DType::kF32); }
ParityBackend cuda_bf16_backend() { return cuda_backend("cuda_bf16", DType::kBF16); }
ParityBackend cuda_f16_backend() { return cuda_backend("cuda_f16", DType::kF16); }
#endif

std::string lower_dtype_name(DType dtype) {
    std::string name(dtype_name(dtype));
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

double dtype_epsilon(DType dtype) {
    switch (dtype) {
        case DType::kF32: return std::ldexp(1.0, -23);
        case DType::kF16: return std::ldexp(1.0, -10);
        case DType::kBF16: return std::ldexp(1.0, -7);
        default: TACO_CHECK_MSG(false, "epsilon of {}", dtype_name(dtype));
    }
    return 0;
}

double scaled_error_epsilons(const ref::Values& got, const ref::Values& want, int64_t row_len, DType dtype,
                             int64_t* worst) {
    TACO_CHECK_EQ(got.size(), want.size());
    TACO_CHECK(row_len > 0 && int64_t(got.size()) % row_len == 0);
    double max_error = 0;
    if (worst != nullptr) *worst = 0;
    for (int64_t begin = 0; begin < int64_t(got.size()); begin += row_len) {
        double magnitude = 0, diff = 0;
        int64_t at = begin;
        for (int64_t i = begin; i < begin + row_len; ++i) {
            magnitude = std::max(magnitude, std::abs(want[size_t(i)]));
            double d = std::abs(got[size_t(i)] - want[size_t(i)]);
            if (std::isnan(d)) d = std::numeric_limits<double>::infinity();  // NaN or a wrong infinity
            if (d > diff) diff = d, at = i;
        }
        const double error = diff / std::max(magnitude, DBL_MIN) / dtype_epsilon(dtype);
        if (error > max_error) {
            max_error = error;
            if (worst != nullptr) *worst = at;
        }
    }
    return max_error;
}

ParityRun::ParityRun(const ParityBackend& backend, std::string label, double bound_epsilons, uint32_t seed)
    : backend_(backend), label_(std::move(label)), bound_(bound_epsilons), rng_(seed) {
    if (backend_.ctx.scratch != nullptr) backend_.ctx.scratch->reset();  // each case carves its temporaries anew
}

double ParityRun::uniform(double lo, double hi) {
    // 32 random bits in [0, 1): the same numbers from any standard library.
    return lo + (hi - lo) * std::ldexp(double(rng_()), -32);
}

int64_t ParityRun::uniform_int(int64_t lo, int64_t hi) { return lo + int64_t(rng_() % uint64_t(hi - lo + 1)); }

TensorView ParityRun::keep(Tensor t) {
    tensors_.push_back(std::move(t));
    return tensors_.back().view();
}

TensorView ParityRun::host_values(std::initializer_list<int64_t> dims, DType dtype, const ref::Values& values) {
    TensorView t = keep(Tensor::empty(dims, dtype));
    TACO_CHECK_EQ(t.numel(), int64_t(values.size()));
    for (int64_t i = 0; i < t.numel(); ++i) store(t, i, values[size_t(i)]);
    return t;
}

TensorView ParityRun::host_random(std::initializer_list<int64_t> dims, DType dtype, double lo, double hi) {
    TensorView t = keep(Tensor::empty(dims, dtype));
    for (int64_t i = 0; i < t.numel(); ++i) store(t, i, uniform(lo, hi));
    return t;
}

TensorView ParityRun::host_random_fp8(std::initializer_list<int64_t> dims, DType dtype) {
    TACO_CHECK(dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2);
    TensorView t = keep(Tensor::empty(dims, dtype));
    for (int64_t i = 0; i < t.numel(); ++i) {
        uint8_t bits = 0;
        do {
            bits = uint8_t(rng_() >> 24);
        } while (!std::isfinite(load_as_f32(&bits, dtype, 0)));  // E4M3: S.1111.111 is NaN; E5M2: exponent 31
        t.as<uint8_t>()[i] = bits;
    }
    return t;
}

TensorView ParityRun::host_i32(std::initializer_list<int64_t> dims, const std::vector<int32_t>& values) {
    TensorView t = keep(Tensor::empty(dims, DType::kI32));
    TACO_CHECK_EQ(t.numel(), int64_t(values.size()));
    std::copy(values.begin(), values.end(), t.as<int32_t>());
    return t;
}

TensorView ParityRun::host_i64(std::initializer_list<int64_t> dims, const std::vector<int64_t>& values) {
    TensorView t = keep(Tensor::empty(dims, DType::kI64));
    TACO_CHECK_EQ(t.numel(), int64_t(values.size()));
    std::copy(values.begin(), values.end(), t.as<int64_t>());
    return t;
}

TensorView ParityRun::device(const TensorView& host) {
    TACO_CHECK(host.device == Device::kCpu && host.is_contiguous());
    const MemoryKind memory = backend_.ctx.device == Device::kCpu ? MemoryKind::kHost : MemoryKind::kDevice;
    TensorView d = keep(Tensor::empty(dims_of(host), host.dtype, memory));
    ops::copy(backend_.ctx, host, d);
    return d;
}

TensorView ParityRun::device_output(std::initializer_list<int64_t> dims, DType dtype) {
    TensorView host = keep(Tensor::empty(dims, dtype));
    for (int64_t i = 0; i < host.numel(); ++i) {
        switch (dtype) {
            case DType::kI32: host.as<int32_t>()[i] = -77; break;
            case DType::kI64: host.as<int64_t>()[i] = -77; break;
            default: store(host, i, std::numeric_limits<double>::quiet_NaN()); break;
        }
    }
    return device(host);
}

Tensor ParityRun::host_copy(const TensorView& device_view) {
    Tensor host = Tensor::empty(dims_of(device_view), device_view.dtype, MemoryKind::kHost);
    ops::copy(backend_.ctx, device_view, host);
    if (backend_.synchronize) backend_.synchronize();
    return host;
}

ref::Values ParityRun::read(const TensorView& device_view) { return ref::values_of(host_copy(device_view)); }

std::vector<int32_t> ParityRun::read_i32(const TensorView& device_view) {
    Tensor host = host_copy(device_view);
    return {host.as<int32_t>(), host.as<int32_t>() + host.numel()};
}

void ParityRun::expect_close(const std::string& what, const TensorView& got_device, const ref::Values& want) {
    expect_close_host(what, read(got_device), want, got_device.shape[got_device.ndim - 1], got_device.dtype);
}

void ParityRun::expect_close_host(const std::string& what, const ref::Values& got, const ref::Values& want,
                                  int64_t row_len, DType dtype) {
    ASSERT_EQ(got.size(), want.size()) << label_ << " " << what;
    if (got.empty()) return;
    int64_t worst = 0;
    const double error = scaled_error_epsilons(got, want, row_len, dtype, &worst);
    max_error_ = std::max(max_error_, error);
    std::printf("[ parity   ] %s %s: %.3g eps (bound %g)\n", label_.c_str(), what.c_str(), error, bound_);
    EXPECT_LE(error, bound_) << label_ << " " << what << ": element " << worst << " (row " << worst / row_len
                             << ", column " << worst % row_len << ") is " << got[size_t(worst)] << ", the reference "
                             << want[size_t(worst)];
}

void ParityRun::expect_equal(const std::string& what, const std::vector<int32_t>& got,
                             const std::vector<int32_t>& want) {
    ASSERT_EQ(got.size(), want.size()) << label_ << " " << what;
    size_t mismatches = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && mismatches++ == 0) first = i;
    std::printf("[ parity   ] %s %s: %zu of %zu differ\n", label_.c_str(), what.c_str(), mismatches, got.size());
    EXPECT_EQ(mismatches, 0u) << label_ << " " << what << ": first at " << first << ": " << got[first]
                              << ", the reference " << want[first];
}

}  // namespace taco::parity
