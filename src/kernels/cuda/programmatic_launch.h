// Programmatic dependent launch (Hopper and later): a kernel queued behind another on a stream may start while that
// one is still running, so its launch, block scheduling and prologue (for the skinny GEMM, prefetching its weights
// into L2) overlap the other's tail instead of following it. launch_kernel (kernel_common.cuh) queues every kernel
// of kernels/cuda this way where the device allows it, and every such kernel calls grid_dependency_wait() before its
// first access to global memory written or read by earlier work, so each kernel still sees the whole of the one
// before it (and, by induction, of everything queued before). Plain C++ header.
#pragma once

namespace taco::cuda {

// TACO_CUDA_PDL's meaning: unset or empty, and "1", allow programmatic launches; "0" queues every kernel after the
// whole of the previous one (for side-by-side measurements and for bisecting); any other value aborts naming it.
bool programmatic_launch_choice(const char* env_value);

// Whether kernels on the current device are queued with programmatic stream serialization: compute capability 9.0
// or later running the kernels' sm_90 code (griddepcontrol), and TACO_CUDA_PDL allows it. Read once per device.
bool programmatic_launch_enabled();

}  // namespace taco::cuda
