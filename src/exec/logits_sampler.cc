#include "exec/logits_sampler.h"

#include <cstdlib>

#include "core/check.h"

#if defined(TACO_WITH_CUDA)
#include "exec/device_batch_sampler.h"
#include "kernels/cuda/env_switch.h"
#endif

namespace taco {

#if defined(TACO_WITH_CUDA)
struct LogitsSampler::DeviceSide {
    DeviceBatchSampler sampler;
};
#else
struct LogitsSampler::DeviceSide {};
#endif

LogitsSampler::LogitsSampler() = default;
LogitsSampler::~LogitsSampler() = default;

void LogitsSampler::reserve_device(int64_t max_draws, int64_t vocab) {
#if defined(TACO_WITH_CUDA)
    if (!device_) device_ = std::make_unique<DeviceSide>();
    device_->sampler.reserve(max_draws, vocab);
#endif
}

bool LogitsSampler::device_grammar_masks() {
#if defined(TACO_WITH_CUDA)
    static const bool enabled =
        cuda::env_switch("TACO_CUDA_DEVICE_GRAMMAR_MASKS", std::getenv("TACO_CUDA_DEVICE_GRAMMAR_MASKS"),
                         "grammar masks applied by the GPU sampler");
    return enabled;
#else
    return false;
#endif
}

void LogitsSampler::sample(const ExecContext& ctx, const TensorView& logits, std::span<const SamplingRow> rows,
                           std::span<SampledToken> out) {
    if (rows.empty() || logits.device == Device::kCpu) {
        host_.sample(logits, rows, out);
        return;
    }
    // Grammar masks on the device unless switched off; then a masked step samples host logits
    // (Engine::sample_rows copies them).
    if (!device_grammar_masks())
        for (const SamplingRow& row : rows)
            TACO_CHECK_MSG(row.allowed_tokens.empty(), "a grammar mask needs host logits, got {} logits",
                           device_name(logits.device));
#if defined(TACO_WITH_CUDA)
    if (!device_) device_ = std::make_unique<DeviceSide>();
    device_->sampler.sample(ctx, logits, rows, out);
#else
    TACO_CHECK_MSG(false, "logits on the {} device need the CUDA build", device_name(logits.device));
#endif
}

}  // namespace taco
