#include "model/moe_routing.h"

#include "core/check.h"

namespace taco {

std::vector<ExpertChoice> route_tokens(const TensorView& logits, const MoeSpec& spec) {
    TACO_CHECK(logits.ndim == 2 && logits.dtype == DType::kF32 && logits.is_contiguous());
    TACO_CHECK_EQ(logits.shape[1], spec.num_experts);
    const int64_t num_tokens = logits.shape[0], k = spec.top_k;
    Tensor ids = Tensor::empty({num_tokens, k}, DType::kI32);
    Tensor weights = Tensor::empty({num_tokens, k}, DType::kF32);
    ops::MoeRouteParams params;
    params.routing = spec.routing;
    params.top_k = int(k);
    params.renormalize = spec.renormalize;
    params.sparsemixer_eps = spec.sparsemixer_eps;
    ops::moe_route(ExecContext::cpu(), logits, TensorView(), params, ids, weights);
    std::vector<ExpertChoice> choices(size_t(num_tokens * k));
    for (int64_t i = 0; i < num_tokens * k; ++i) choices[size_t(i)] = {ids.as<int32_t>()[i], weights.as<float>()[i]};
    return choices;
}

}  // namespace taco
