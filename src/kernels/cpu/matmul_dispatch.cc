#include "kernels/cpu/matmul_internal.h"

namespace taco::cpu {

void matmul_dispatch(const MatmulArgs& args) { matmul_scalar(args); }

}  // namespace taco::cpu
