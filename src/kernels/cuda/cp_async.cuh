// Asynchronous global -> shared copies (cp.async, sm_80 and later) for the kernels that stream through shared
// memory (paged_attention_mma.cu). A thread's copies are grouped by commit; wait_group<N> returns
// when all but that thread's newest N groups have landed (it says nothing of other threads' copies).
#pragma once

#include <cstdint>

namespace taco::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* ptr) { return uint32_t(__cvta_generic_to_shared(ptr)); }

// 16 bytes global -> shared, bypassing L1 (data read once), or 16 zero bytes when !valid (src is then not read).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kNewestPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kNewestPending) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
    cp_async_commit();
    cp_async_wait<0>();
}

}  // namespace taco::cuda
