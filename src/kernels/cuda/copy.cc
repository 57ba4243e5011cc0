// ops::copy on CUDA: one asynchronous copy on ctx.stream between any mix of host, pinned and device memory
// (cudaMemcpyDefault: unified addressing tells the runtime where each side lives), of contiguous operands or of the
// rows of a rectangle (cudaMemcpy2DAsync). From pageable host memory the
// copy returns once the source has been staged, so the caller may reuse it.
#include "core/tensor.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace taco::cuda {

void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst) {
    if (src.nbytes() == 0) return;
    const auto stream = static_cast<cudaStream_t>(ctx.stream);
    if (src.is_contiguous() && dst.is_contiguous()) {
        TACO_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDefault, stream));
        return;
    }
    // Rows of a rectangle (ops.cc checked the shapes and strides): one 2-D copy.
    const size_t element = dtype_size_bytes(src.dtype);
    TACO_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, size_t(dst.strides[0]) * element, src.data,
                                      size_t(src.strides[0]) * element, size_t(src.shape[1]) * element,
                                      size_t(src.shape[0]), cudaMemcpyDefault, stream));
}

}  // namespace taco::cuda
