#include "model/weight_placer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/allocator.h"
#include "core/check.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "kernels/ops.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace taco {
namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Converts n elements in parallel (the host side of a transfer is the bottleneck for dtype conversion).
void convert_parallel(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n) {
    const size_t in = dtype_size_bytes(src_dtype), out = dtype_size_bytes(dst_dtype);
    ThreadPool::global().parallel_for(n, 1 << 18, [&](int64_t begin, int64_t end) {
        convert_floats(static_cast<const uint8_t*>(src) + size_t(begin) * in, src_dtype,
                       static_cast<uint8_t*>(dst) + size_t(begin) * out, dst_dtype, size_t(end - begin));
    });
}

}  // namespace

// Two pinned buffers: chunk i is converted into buffer i % 2 while chunk i - 1 copies from the other one.
struct WeightPlacer::Staging {
#ifdef TACO_WITH_CUDA
    static constexpr int64_t kBufferBytes = int64_t(64) << 20;
    std::unique_ptr<cuda::DeviceStream> stream;
    Tensor buffers[2];
    bool pending[2] = {false, false};
    int next = 0;
#endif
};

Result<std::unique_ptr<WeightPlacer>> WeightPlacer::create(Device device, DType matrix_dtype, bool progress,
                                                           size_t total_bytes) {
    if (matrix_dtype != DType::kF32 && matrix_dtype != DType::kF16 && matrix_dtype != DType::kBF16)
        return error("weights cannot be served in {}", dtype_name(matrix_dtype));
    std::unique_ptr<WeightPlacer> placer(new WeightPlacer(device, matrix_dtype, progress, total_bytes));
    if (device == Device::kCuda) {
#ifdef TACO_WITH_CUDA
        TACO_RETURN_IF_ERROR(cuda::init_backend());
        placer->staging_ = std::make_unique<Staging>();
        TACO_ASSIGN_OR_RETURN(placer->staging_->stream, cuda::DeviceStream::create());
        for (Tensor& b : placer->staging_->buffers) b = Tensor::empty_pinned({Staging::kBufferBytes}, DType::kU8);
#else
        return error("--device cuda: this taco_llm was built without CUDA (build the 'cuda' preset)");
#endif
    }
    return placer;
}

Status WeightPlacer::check_room(size_t bytes) const {
    int64_t free_bytes = -1;
    if (device_ == Device::kCpu) {
        free_bytes = host_available_bytes();
    } else {
#ifdef TACO_WITH_CUDA
        free_bytes = int64_t(cuda::device_memory().free_bytes);
#endif
    }
    if (free_bytes < 0 || int64_t(bytes) <= free_bytes) return Status::ok();
    return error("the weights take {:.2f} GiB in {} on the {}, and only {:.2f} GiB are free there",
                 double(bytes) / double(1 << 30), dtype_name(matrix_dtype_), device_ == Device::kCpu ? "host" : "GPU",
                 double(free_bytes) / double(1 << 30));
}

WeightPlacer::WeightPlacer(Device device, DType matrix_dtype, bool progress, size_t total_bytes)
    : device_(device),
      matrix_dtype_(matrix_dtype),
      progress_(progress && total_bytes > 0 && isatty(fileno(stderr))),
      total_bytes_(total_bytes),
      started_(now_seconds()) {}

WeightPlacer::~WeightPlacer() = default;

TensorView WeightPlacer::matrix(const TensorView& host) {
    TACO_CHECK_MSG(host.device == Device::kCpu && host.is_contiguous() && dtype_is_float(host.dtype),
                   "WeightPlacer: a weight must be a contiguous host float tensor, got {} {}", host.shape_string(),
                   dtype_name(host.dtype));
    auto key = std::make_tuple(static_cast<const void*>(host.data), int(host.dtype),
                               std::vector<int64_t>(host.shape.begin(), host.shape.begin() + host.ndim));
    if (auto it = placed_.find(key); it != placed_.end()) return it->second;
    TensorView placed = host;
    if (device_ != Device::kCpu || host.dtype != matrix_dtype_) {
        const MemoryKind memory = device_ == Device::kCuda ? MemoryKind::kDevice : MemoryKind::kHost;
        storage_.push_back(
            Tensor::empty(std::span<const int64_t>(host.shape.data(), size_t(host.ndim)), matrix_dtype_, memory));
        placed = storage_.back().view();
        transfer(host, placed);
    }
    placed_.emplace(std::move(key), placed);
    return placed;
}

Tensor WeightPlacer::vector(Tensor host) {
    if (device_ == Device::kCpu || !host.defined()) return host;
    const TensorView& v = host.view();
    Tensor out = Tensor::empty(std::span<const int64_t>(v.shape.data(), size_t(v.ndim)), v.dtype, MemoryKind::kDevice);
    transfer(v, out.view());  // reads `host` before returning (the copy is from a staging buffer)
    return out;
}

void WeightPlacer::transfer(const TensorView& src, const TensorView& dst) {
    const int64_t n = src.numel();
    if (device_ == Device::kCpu) {
        convert_parallel(src.data, src.dtype, dst.data, dst.dtype, n);
        report(dst.nbytes());
        return;
    }
#ifdef TACO_WITH_CUDA
    Staging& s = *staging_;
    const ExecContext ctx = s.stream->context(nullptr);
    const size_t elem = std::max(dtype_size_bytes(src.dtype), dtype_size_bytes(dst.dtype));
    const int64_t chunk = Staging::kBufferBytes / int64_t(elem);
    const size_t out_size = dtype_size_bytes(dst.dtype);
    for (int64_t begin = 0; begin < n; begin += chunk) {
        const int64_t count = std::min(chunk, n - begin);
        Tensor& buffer = s.buffers[s.next];
        // A buffer is refilled only once its previous copy is done (synchronize also waits for the other one).
        if (s.pending[s.next]) {
            s.stream->synchronize();
            s.pending[0] = s.pending[1] = false;
        }
        convert_parallel(static_cast<const uint8_t*>(src.data) + size_t(begin) * dtype_size_bytes(src.dtype), src.dtype,
                         buffer.view().data, dst.dtype, count);
        const TensorView staged(buffer.view().data, dst.dtype, {count}, Device::kCpu);
        const TensorView target(static_cast<uint8_t*>(dst.data) + size_t(begin) * out_size, dst.dtype, {count},
                                Device::kCuda);
        ops::copy(ctx, staged, target);
        s.pending[s.next] = true;
        s.next ^= 1;
        report(size_t(count) * out_size);
    }
#endif
}

void WeightPlacer::report(size_t bytes) {
    done_bytes_ += bytes;
    if (!progress_) return;
    const int percent = int(100.0 * double(done_bytes_) / double(std::max<size_t>(total_bytes_, 1)));
    if (percent == last_percent_) return;
    last_percent_ = percent;
    std::fprintf(stderr, "\rLoading weights: %3d%% (%.2f / %.2f GB)", std::min(percent, 100), double(done_bytes_) / 1e9,
                 double(total_bytes_) / 1e9);
    std::fflush(stderr);
}

void WeightPlacer::finish() {
#ifdef TACO_WITH_CUDA
    if (staging_ != nullptr) {
        staging_->stream->synchronize();
        staging_->pending[0] = staging_->pending[1] = false;
    }
#endif
}

}  // namespace taco
