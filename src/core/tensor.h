// TensorView (non-owning) and Tensor (owning): the only thing layers and kernels exchange. Row-major; strides
// are in elements. A tensor has a place (Device): host memory is read through as<T>() / row<T>(), which check
// that the memory is host-addressable and that T fits the dtype; device memory is only ever handed to kernels.
// Views keep dtype, device and strides: reshape (contiguous only), rows (a range of the leading dim), slice (a
// range of any dim).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>

#include "core/allocator.h"
#include "core/check.h"
#include "core/dtype.h"

namespace taco {

constexpr int kMaxDims = 4;

// Whether elements of `dtype` may be read as T on the host: exact for f32 / i32 / i64, 16-bit words for f16 and
// bf16, bytes for anything.
template <class T>
bool host_type_matches(DType dtype) {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return dtype == DType::kF32;
    if constexpr (std::is_same_v<U, int32_t>) return dtype == DType::kI32;
    if constexpr (std::is_same_v<U, int64_t>) return dtype == DType::kI64;
    if constexpr (std::is_same_v<U, uint16_t>) return dtype == DType::kF16 || dtype == DType::kBF16;
    if constexpr (std::is_same_v<U, uint8_t> || std::is_same_v<U, int8_t> || std::is_same_v<U, char> ||
                  std::is_same_v<U, std::byte> || std::is_void_v<U>)
        return true;
    return false;
}

struct TensorView {
    void* data = nullptr;
    DType dtype = DType::kF32;
    Device device = Device::kCpu;
    int ndim = 0;
    std::array<int64_t, kMaxDims> shape{};
    std::array<int64_t, kMaxDims> strides{};  // in elements

    TensorView() = default;
    TensorView(void* data, DType dtype, std::initializer_list<int64_t> dims, Device device = Device::kCpu);
    TensorView(void* data, DType dtype, std::span<const int64_t> dims, Device device = Device::kCpu);

    bool defined() const { return data != nullptr; }
    int64_t size(int dim) const {
        TACO_CHECK_MSG(dim >= 0 && dim < ndim, "dim {} of a {}-d tensor", dim, ndim);
        return shape[dim];
    }
    int64_t numel() const;
    size_t nbytes() const { return size_t(numel()) * dtype_size_bytes(dtype); }
    bool is_contiguous() const;
    std::string shape_string() const;  // "[2, 64]"

    // The same elements with other dims (contiguous views only; one dim may be -1, inferred).
    TensorView reshape(std::initializer_list<int64_t> dims) const;
    // Rows [begin, end) of the leading dim.
    TensorView rows(int64_t begin, int64_t end) const { return slice(0, begin, end); }
    // Indices [begin, end) of dim `dim`; strides unchanged.
    TensorView slice(int dim, int64_t begin, int64_t end) const;

    // Host access: checked against the device and the dtype.
    template <class T>
    T* as() const {
        check_host_access(host_type_matches<T>(dtype));
        return static_cast<T*>(data);
    }
    // Row r of the leading dim.
    template <class T>
    T* row(int64_t r) const {
        return as<T>() + r * strides[0];
    }

private:
    void check_host_access(bool type_matches) const;
};

// A tensor owning its buffer (host, pinned host or device memory from allocator_for). Movable, not copyable.
class Tensor {
public:
    Tensor() = default;
    Tensor(Tensor&& other) noexcept;
    Tensor& operator=(Tensor&& other) noexcept;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    ~Tensor();

    static Tensor empty(std::initializer_list<int64_t> dims, DType dtype, Device device = Device::kCpu);
    static Tensor empty(std::span<const int64_t> dims, DType dtype, MemoryKind memory);
    static Tensor empty_pinned(std::initializer_list<int64_t> dims, DType dtype);
    static Tensor zeros(std::initializer_list<int64_t> dims, DType dtype);  // host

    const TensorView& view() const { return view_; }
    TensorView& view() { return view_; }
    operator const TensorView&() const { return view_; }  // NOLINT(google-explicit-constructor)
    template <class T>
    T* as() const {
        return view_.as<T>();
    }
    int64_t size(int dim) const { return view_.size(dim); }
    int64_t numel() const { return view_.numel(); }
    bool defined() const { return view_.data != nullptr; }
    MemoryKind memory() const { return memory_; }

private:
    void release();

    TensorView view_;
    MemoryKind memory_ = MemoryKind::kHost;
    size_t bytes_ = 0;
};

}  // namespace taco
