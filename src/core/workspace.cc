#include "core/workspace.h"

#include <algorithm>

namespace taco {
namespace {
constexpr size_t kAlignment = 256;
}

TensorView Workspace::alloc(std::initializer_list<int64_t> dims, DType dtype) {
    TensorView view(nullptr, dtype, dims, device());
    const size_t bytes = (view.nbytes() + kAlignment - 1) / kAlignment * kAlignment;
    const size_t begin = offset_;
    offset_ += bytes;
    high_water_ = std::max(high_water_, offset_);
    if (sized()) {
        TACO_CHECK_MSG(
            offset_ <= capacity_,
            "workspace overflow: {} bytes asked for a {} {} tensor at offset {}, capacity {} (the runner was "
            "sized for a smaller step)",
            bytes, view.shape_string(), dtype_name(dtype), begin, capacity_);
        view.data = static_cast<uint8_t*>(buffer_.view().data) + begin;
    }
    return view;
}

void Workspace::release_to(size_t mark) {
    TACO_CHECK_LE(mark, offset_);
    offset_ = mark;
}

void Workspace::reserve(size_t bytes) {
    TACO_CHECK_MSG(!sized(), "workspace reserved twice");
    capacity_ = std::max<size_t>(bytes, kAlignment);
    const int64_t dims[1] = {int64_t(capacity_)};
    buffer_ = Tensor::empty(std::span<const int64_t>(dims, 1), DType::kU8, memory_);
}

}  // namespace taco
