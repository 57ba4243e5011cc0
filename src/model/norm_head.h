// Baichuan2's NormHead: the output layer's rows are scaled to unit L2 norm before use (the modeling code does it
// once, on the first inference call, as torch.nn.functional.normalize(weight): row / max(||row||, 1e-12)).
#pragma once

#include "core/tensor.h"

namespace taco {

// [rows, cols] in any float dtype -> [rows, cols] f32 with each row divided by max(its L2 norm, 1e-12).
Tensor rows_l2_normalized(const TensorView& matrix);

}  // namespace taco
