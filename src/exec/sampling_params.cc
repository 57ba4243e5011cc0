#include "exec/sampling_params.h"

#include <cmath>

namespace taco {

Status SamplingParams::validate() const {
    if (!(temperature >= 0) || !std::isfinite(temperature))
        return error("temperature must be a non-negative number, got {}", temperature);
    if (!(top_p > 0 && top_p <= 1)) return error("top_p must be in (0, 1], got {}", top_p);
    if (top_k < -1) return error("top_k must be -1 (off), 0 (off) or positive, got {}", top_k);
    if (max_tokens < 1) return error("max_tokens must be at least 1, got {}", max_tokens);
    if (min_tokens < 0) return error("min_tokens must be non-negative, got {}", min_tokens);
    if (min_tokens > max_tokens)
        return error("min_tokens ({}) must not exceed max_tokens ({})", min_tokens, max_tokens);
    return Status::ok();
}

}  // namespace taco
