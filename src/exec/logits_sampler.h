// LogitsSampler: the step's sampler, chosen by where the logits are. Host logits go to BatchSampler; device
// logits (the CUDA runner's) to DeviceBatchSampler, created on first use, so they never leave the GPU: only the
// tokens and the logprobs asked for come back. Both draw the same tokens from the same logits
// (exec/device_batch_sampler.h). Plain C++ in both builds; device logits in the CPU build are an error.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.h"
#include "exec/batch_sampler.h"
#include "kernels/exec_context.h"

namespace taco {

class LogitsSampler {
public:
    LogitsSampler();
    ~LogitsSampler();
    LogitsSampler(const LogitsSampler&) = delete;
    LogitsSampler& operator=(const LogitsSampler&) = delete;

    // BatchSampler::sample by logits.device. Rows with a grammar mask (SamplingRow::allowed_tokens) on device logits
    // need device_grammar_masks() (else the caller samples host logits). ctx: the context the logits were computed on;
    // for device logits its stream orders the sampling after the forward pass (unused for host logits).
    void sample(const ExecContext& ctx, const TensorView& logits, std::span<const SamplingRow> rows,
                std::span<SampledToken> out);

    // Takes now the device scratch of a step of up to max_draws draws over `vocab` tokens (DeviceBatchSampler::
    // reserve), so a GPU engine holds it before its KV cache is sized; a no-op in the CPU build.
    void reserve_device(int64_t max_draws, int64_t vocab);

    // Whether device logits with grammar masks are sampled on the GPU (DeviceBatchSampler applies the masks; its
    // parity test DeviceBatchSamplerTest.GrammarMasksDrawTheCpuSamplersTokensAndLogprobs passed on an H100,
    // bench/results/h100-2026-12-07b): on by default, TACO_CUDA_DEVICE_GRAMMAR_MASKS=0 samples masked rows from host
    // logits instead (the logits of the step come to the host); false in the CPU build.
    static bool device_grammar_masks();

private:
    struct DeviceSide;  // the DeviceBatchSampler (CUDA build)

    BatchSampler host_;
    std::unique_ptr<DeviceSide> device_;
};

}  // namespace taco
