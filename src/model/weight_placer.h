// WeightPlacer: puts a bound decoder's weights where and in which dtype they are served (Decoder::load with
// LoadOptions). Matrices go to the served dtype; small f32 vectors (norms, biases, slopes, rotary tables) stay f32.
// On CUDA every tensor is streamed from its host source (the mmapped checkpoint, or a host copy made at bind time)
// through two pinned staging buffers, converted to the served dtype on the host while the previous chunk copies.
// On the CPU a matrix already in the served dtype stays a view of the mapping (no copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace taco {

class WeightPlacer {
public:
    // `total_bytes`: what will be placed, in served bytes (for the progress bar; 0: none shown).
    static Result<std::unique_ptr<WeightPlacer>> create(Device device, DType matrix_dtype, bool progress,
                                                        size_t total_bytes);
    ~WeightPlacer();
    WeightPlacer(const WeightPlacer&) = delete;
    WeightPlacer& operator=(const WeightPlacer&) = delete;

    Device device() const { return device_; }
    DType matrix_dtype() const { return matrix_dtype_; }
    // An error naming the sizes unless `bytes` more fit where the weights go (the GPU's free memory, or the host's
    // available memory): checked before placing, so a model too large for the machine does not abort half-loaded.
    Status check_room(size_t bytes) const;

    // A contiguous host matrix (any rank) in the served dtype and place; the placer owns the result. The same
    // source view (data, dtype, shape) gives the same result, so tied weights stay one tensor.
    TensorView matrix(const TensorView& host);
    // A host f32 tensor (vector, table) moved to the device (on the CPU: returned as it is).
    Tensor vector(Tensor host);

    // Waits for the last copies; the placed tensors are ready. Logs the size and rate.
    void finish();
    // The tensors matrix() made (the decoder keeps them for its lifetime).
    std::deque<Tensor> take_storage() { return std::move(storage_); }

private:
    WeightPlacer(Device device, DType matrix_dtype, bool progress, size_t total_bytes);
    // Host src (any float dtype) -> dst (host or device memory, dst.dtype), chunked through the staging buffers.
    void transfer(const TensorView& src, const TensorView& dst);
    void report(size_t bytes);

    struct Staging;
    Device device_;
    DType matrix_dtype_;
    bool progress_;
    size_t total_bytes_;
    size_t done_bytes_ = 0;
    int last_percent_ = -1;
    double started_ = 0;
    std::unique_ptr<Staging> staging_;  // CUDA only
    std::deque<Tensor> storage_;
    std::map<std::tuple<const void*, int, std::vector<int64_t>>, TensorView> placed_;
};

}  // namespace taco
