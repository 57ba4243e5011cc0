// Programmatic dependent launch (Hopper and later): a kernel queued behind another on a stream may start while that
// one is still running, so its launch, block scheduling and prologue (the skinny GEMM's barrier setup) overlap the
// other's tail instead of following it. launch_kernel (kernel_common.cuh) queues every kernel of kernels/cuda this
// way where the device allows it, and every such kernel calls grid_dependency_wait() before its first access to
// global memory, so each kernel still sees the whole of the one before it (and, by induction, of everything queued
// before). On the H200 (bench/results/h200-2026-12-03c) bs=1 decode of the 8B shape went 197 -> 203 tok/s. Having
// the skinny GEMM's first blocks prefetch their weights into L2 before the wait was measured too and lost (200 tok/s
// for the bulk build's first stages, 177 for whole tiles of the register build's first wave): it is not done.
// One exception to "before its first access": a kernel launched early starts only once the one before it has passed
// its own wait, so everything queued before that one is complete and visible; the decode attention kernel and the
// split-KV merge (TACO_CUDA_ATTENTION_EARLY_PROLOGUE, paged_attention.h) read the step's metadata, block tables and
// earlier steps' keys before waiting, and wait before reading anything the kernel just before them writes (Q, this
// step's key and value, the partials) and before any write or return.
// Plain C++ header.
#pragma once

namespace taco::cuda {

// TACO_CUDA_PDL's meaning: unset or empty, and "1", allow programmatic launches; "0" queues every kernel after the
// whole of the previous one (for side-by-side measurements and for bisecting); any other value aborts naming it.
bool programmatic_launch_choice(const char* env_value);

// Whether the current device runs the kernels' sm_90 code (compute capability 9.0 or later and a binary with sm_90
// code for it; a "90a;80" binary runs its sm_80 code elsewhere): Hopper-only instructions (griddepcontrol, the bulk
// copy engine) exist only there. Read once per device.
bool hopper_code_runs();

// Whether kernels on the current device are queued with programmatic stream serialization: compute capability 9.0
// or later running the kernels' sm_90 code (griddepcontrol), and TACO_CUDA_PDL allows it. Read once per device.
bool programmatic_launch_enabled();

}  // namespace taco::cuda
