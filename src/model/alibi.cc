#include "model/alibi.h"

#include <algorithm>
#include <cmath>

namespace taco {

std::vector<float> alibi_slopes(int64_t num_heads) {
    std::vector<float> slopes;
    if (num_heads <= 0) return slopes;
    int64_t power_of_two = 1;
    while (power_of_two * 2 <= num_heads) power_of_two *= 2;
    // The bases are float32 tensors in transformers; powers are taken from the rounded base.
    const double base = double(float(std::pow(2.0, -8.0 / double(power_of_two))));
    for (int64_t i = 1; i <= power_of_two; ++i) slopes.push_back(float(std::pow(base, double(i))));
    if (power_of_two != num_heads) {
        const double extra_base = double(float(std::pow(2.0, -4.0 / double(power_of_two))));
        const int64_t remaining = std::min(power_of_two, num_heads - power_of_two);
        for (int64_t i = 0; i < remaining; ++i) slopes.push_back(float(std::pow(extra_base, double(2 * i + 1))));
    }
    return slopes;
}

}  // namespace taco
