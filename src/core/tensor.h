// TensorView (non-owning) and Tensor (owning, host memory): the only thing layers and kernels exchange.
// Row-major; strides are in elements. Kernels check shape, dtype and contiguity before dispatching.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/check.h"
#include "core/dtype.h"

namespace taco {

enum class Device : uint8_t { kCpu, kCuda };

constexpr int kMaxDims = 4;

struct TensorView {
    void* data = nullptr;
    DType dtype = DType::kF32;
    Device device = Device::kCpu;
    int ndim = 0;
    std::array<int64_t, kMaxDims> shape{};
    std::array<int64_t, kMaxDims> strides{};  // in elements

    TensorView() = default;
    TensorView(void* data, DType dtype, std::initializer_list<int64_t> dims, Device device = Device::kCpu);

    int64_t size(int dim) const {
        TACO_CHECK_MSG(dim >= 0 && dim < ndim, "dim {} of a {}-d tensor", dim, ndim);
        return shape[dim];
    }
    int64_t numel() const;
    size_t nbytes() const { return size_t(numel()) * dtype_size_bytes(dtype); }
    bool is_contiguous() const;
    std::string shape_string() const;  // "[2, 64]"

    template <class T>
    T* as() const {
        return static_cast<T*>(data);
    }
    // Row r of a 2-d (or the leading dim of an n-d) contiguous tensor.
    template <class T>
    T* row(int64_t r) const {
        return static_cast<T*>(data) + r * strides[0];
    }
};

// Host tensor with a 64-byte aligned buffer it owns. Movable, not copyable.
class Tensor {
public:
    Tensor() = default;
    static Tensor empty(std::initializer_list<int64_t> dims, DType dtype);
    static Tensor zeros(std::initializer_list<int64_t> dims, DType dtype);

    const TensorView& view() const { return view_; }
    TensorView& view() { return view_; }
    operator const TensorView&() const { return view_; }  // NOLINT(google-explicit-constructor)
    template <class T>
    T* as() const {
        return view_.as<T>();
    }
    int64_t size(int dim) const { return view_.size(dim); }
    int64_t numel() const { return view_.numel(); }
    bool defined() const { return buffer_ != nullptr; }

private:
    struct FreeDeleter {
        void operator()(void* p) const;
    };
    std::unique_ptr<void, FreeDeleter> buffer_;
    TensorView view_;
};

}  // namespace taco
