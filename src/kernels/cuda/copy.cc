// ops::copy on CUDA: one asynchronous copy on ctx.stream between any mix of host, pinned and device memory
// (cudaMemcpyDefault: unified addressing tells the runtime where each side lives). From pageable host memory the
// copy returns once the source has been staged, so the caller may reuse it.
#include "core/tensor.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace taco::cuda {

void copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst) {
    if (src.nbytes() == 0) return;
    TACO_CUDA_CHECK(
        cudaMemcpyAsync(dst.data, src.data, src.nbytes(), cudaMemcpyDefault, static_cast<cudaStream_t>(ctx.stream)));
}

}  // namespace taco::cuda
