#include "core/tensor.h"

#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace taco {

TensorView::TensorView(void* data_in, DType dtype_in, std::initializer_list<int64_t> dims, Device device_in)
    : TensorView(data_in, dtype_in, std::span<const int64_t>(dims.begin(), dims.size()), device_in) {}

TensorView::TensorView(void* data_in, DType dtype_in, std::span<const int64_t> dims, Device device_in)
    : data(data_in), dtype(dtype_in), device(device_in), ndim(int(dims.size())) {
    TACO_CHECK_LE(ndim, kMaxDims);
    int i = 0;
    for (int64_t d : dims) {
        TACO_CHECK_GE(d, 0);
        shape[i++] = d;
    }
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        strides[d] = stride;
        stride *= shape[d];
    }
}

int64_t TensorView::numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
}

bool TensorView::is_contiguous() const {
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[d] != stride) return false;
        stride *= shape[d];
    }
    return true;
}

std::string TensorView::shape_string() const {
    std::string out = "[";
    for (int d = 0; d < ndim; ++d) out += fmt::format("{}{}", d ? ", " : "", shape[d]);
    return out + "]";
}

TensorView TensorView::reshape(std::initializer_list<int64_t> dims) const {
    TACO_CHECK_MSG(is_contiguous(), "reshape of a non-contiguous {} tensor", shape_string());
    std::array<int64_t, kMaxDims> out{};
    TACO_CHECK_LE(int(dims.size()), kMaxDims);
    int inferred = -1, i = 0;
    int64_t known = 1;
    for (int64_t d : dims) {
        if (d == -1) {
            TACO_CHECK_MSG(inferred < 0, "reshape with two -1 dims");
            inferred = i;
        } else {
            TACO_CHECK_GE(d, 0);
            known *= d;
        }
        out[size_t(i++)] = d;
    }
    if (inferred >= 0) {
        TACO_CHECK_MSG(known > 0 && numel() % known == 0, "cannot reshape {} with a -1 dim", shape_string());
        out[size_t(inferred)] = numel() / known;
        known *= out[size_t(inferred)];
    }
    TACO_CHECK_MSG(known == numel(), "reshape of {} ({} elements) to {} elements", shape_string(), numel(), known);
    return TensorView(data, dtype, std::span<const int64_t>(out.data(), dims.size()), device);
}

TensorView TensorView::slice(int dim, int64_t begin, int64_t end) const {
    TACO_CHECK_MSG(dim >= 0 && dim < ndim, "slice of dim {} of a {}-d tensor", dim, ndim);
    TACO_CHECK_MSG(0 <= begin && begin <= end && end <= shape[dim], "slice [{}, {}) of dim {} of {}", begin, end, dim,
                   shape_string());
    TensorView out = *this;
    out.shape[dim] = end - begin;
    if (data != nullptr)
        out.data = static_cast<uint8_t*>(data) + size_t(begin * strides[dim]) * dtype_size_bytes(dtype);
    return out;
}

void TensorView::check_host_access(bool type_matches) const {
    TACO_CHECK_MSG(device == Device::kCpu, "host access to a {} tensor on the {}", shape_string(), device_name(device));
    TACO_CHECK_MSG(type_matches, "host access to a {} tensor as the wrong element type", dtype_name(dtype));
}

Tensor::Tensor(Tensor&& other) noexcept
    : view_(std::exchange(other.view_, TensorView())), memory_(other.memory_), bytes_(std::exchange(other.bytes_, 0)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
    if (this != &other) {
        release();
        view_ = std::exchange(other.view_, TensorView());
        memory_ = other.memory_;
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

Tensor::~Tensor() { release(); }

void Tensor::release() {
    if (view_.data != nullptr) allocator_for(memory_).deallocate(view_.data, bytes_);
    view_ = TensorView();
    bytes_ = 0;
}

Tensor Tensor::empty(std::span<const int64_t> dims, DType dtype, MemoryKind memory) {
    Tensor t;
    t.view_ = TensorView(nullptr, dtype, dims, device_of(memory));
    t.memory_ = memory;
    t.bytes_ = t.view_.nbytes();
    t.view_.data = allocator_for(memory).allocate(t.bytes_);
    return t;
}

Tensor Tensor::empty(std::initializer_list<int64_t> dims, DType dtype, Device device) {
    return empty(std::span<const int64_t>(dims.begin(), dims.size()), dtype,
                 device == Device::kCuda ? MemoryKind::kDevice : MemoryKind::kHost);
}

Tensor Tensor::empty_pinned(std::initializer_list<int64_t> dims, DType dtype) {
    return empty(std::span<const int64_t>(dims.begin(), dims.size()), dtype, MemoryKind::kPinnedHost);
}

Tensor Tensor::zeros(std::initializer_list<int64_t> dims, DType dtype) {
    Tensor t = empty(dims, dtype);
    std::memset(t.view_.data, 0, t.view_.nbytes());
    return t;
}

}  // namespace taco
