// Hopper's bulk copy engine and the shared-memory barriers it completes on (sm_90 and later), for kernels that stream
// contiguous global memory through a ring of shared-memory stages (skinny_gemm_bulk.cu). A stage's `full` barrier
// is armed by the thread that issues its copies with the bytes they will bring (expect_tx) and completes when they
// have landed; its `empty` barrier counts the consumers done reading it. Phases alternate 0, 1, 0, ...: a fresh
// barrier is in phase 0, and waiting on parity 1 of a fresh barrier returns at once (a ring's first pass).
// Only compiled for __CUDA_ARCH__ >= 900; callers guard their use.
#pragma once

#include <cstdint>

#include "kernels/cuda/cp_async.cuh"  // smem_addr

namespace taco::cuda {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
}

// After the barriers' initialisation, before the __syncthreads that publishes them: visible to the copy engine.
__device__ __forceinline__ void mbarrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// One arrival that also announces `bytes` of copies completing on this barrier in its current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Announces `bytes` of copies completing on this barrier in its current phase, without arriving.
__device__ __forceinline__ void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Spins until the phase of the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
    const uint32_t addr = smem_addr(bar);
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(addr), "r"(parity)
            : "memory");
    } while (!done);
}

// An L2 policy for data read once (weights streamed by a decode step): evicted first, so it does not push out what
// the next kernels reread (activations, the KV cache).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) global -> shared by the copy engine, completing on `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                                    uint64_t policy) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
        "%4;\n" ::"r"(smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
}

// A barrier among `threads` threads of the block (a multiple of 32), id 1..15 (0 is __syncthreads').
__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

#endif

}  // namespace taco::cuda
