// Picks the matmul path once per process: the widest ISA the CPU has, or the one TACO_CPU_ISA names.
#include <cpuid.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/check.h"
#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {
namespace {

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c"; the fuzz and sanitizer builds use it).
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

}  // namespace

CpuIsa choose_matmul_isa(const char* forced) {
    if (forced != nullptr && *forced != '\0') {
        const std::string_view name(forced);
        std::optional<CpuIsa> named;
        for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512})
            if (name == cpu_isa_name(isa)) named = isa;
        TACO_CHECK_MSG(named.has_value(), "TACO_CPU_ISA={} is not one of scalar, avx2, avx512", name);
        TACO_CHECK_MSG(cpu_supports(*named), "TACO_CPU_ISA={} but this CPU does not support {}", name, name);
        return *named;
    }
    if (cpu_supports(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
    if (cpu_supports(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
    return CpuIsa::kScalar;
}

const char* cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::kScalar: return "scalar";
        case CpuIsa::kAvx2: return "avx2";
        case CpuIsa::kAvx512: return "avx512";
    }
    return "unknown";
}

bool cpu_supports(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::kScalar: return true;
        case CpuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
        case CpuIsa::kAvx512:
            return cpu_supports(CpuIsa::kAvx2) && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512dq");
    }
    return false;
}

void matmul_with_isa(CpuIsa isa, const MatmulArgs& args) {
    switch (isa) {
        case CpuIsa::kScalar: matmul_scalar(args); return;
        case CpuIsa::kAvx2: matmul_avx2(args); return;
        case CpuIsa::kAvx512: matmul_avx512(args); return;
    }
}

CpuIsa matmul_isa() {
    static const CpuIsa isa = choose_matmul_isa(std::getenv("TACO_CPU_ISA"));
    return isa;
}

const char* matmul_isa_name() { return cpu_isa_name(matmul_isa()); }

void matmul_dispatch(const MatmulArgs& args) { matmul_with_isa(matmul_isa(), args); }

}  // namespace taco::cpu
