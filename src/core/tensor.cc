#include "core/tensor.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace taco {

TensorView::TensorView(void* data_in, DType dtype_in, std::initializer_list<int64_t> dims, Device device_in)
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

void Tensor::FreeDeleter::operator()(void* p) const { std::free(p); }

Tensor Tensor::empty(std::initializer_list<int64_t> dims, DType dtype) {
    Tensor t;
    t.view_ = TensorView(nullptr, dtype, dims);
    size_t bytes = (t.view_.nbytes() + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
    TACO_CHECK_MSG(p != nullptr, "out of host memory allocating {} bytes", bytes);
    t.buffer_.reset(p);
    t.view_.data = p;
    return t;
}

Tensor Tensor::zeros(std::initializer_list<int64_t> dims, DType dtype) {
    Tensor t = empty(dims, dtype);
    std::memset(t.view_.data, 0, t.view_.nbytes());
    return t;
}

}  // namespace taco
