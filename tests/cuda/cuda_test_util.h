// Helpers of the CUDA end-to-end tests: skip without a GPU, load a golden model on either device, run a prompt's last
// logits through a ForwardExecutor, build engines on a device with a small KV budget.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "exec/forward_executor.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/skinny_gemm.h"
#include "model/decoder.h"

namespace taco::testing_util {

// Starts the CUDA backend; false (the test should skip with `reason`) where no GPU or driver is usable.
bool cuda_usable(std::string* reason);

#define TACO_SKIP_WITHOUT_GPU()                                                                        \
    do {                                                                                               \
        std::string taco_skip_reason_;                                                                 \
        if (!::taco::testing_util::cuda_usable(&taco_skip_reason_)) GTEST_SKIP() << taco_skip_reason_; \
    } while (0)

// Synchronous copies of a contiguous tensor to device memory and back to host memory (same shape and dtype);
// a failed copy is a test failure.
Tensor to_device(const TensorView& host);
Tensor to_host(const TensorView& device);

// Decoder::load with LoadOptions{device, dtype}; a test failure and null on error.
std::unique_ptr<Decoder> load_on(const std::string& dir, Device device, std::optional<DType> dtype);

// The logits [vocab] of the last prompt token, the prompt run as one prefill through a ForwardExecutor on the
// decoder's device (a cache in its memory and activation dtype).
std::vector<float> last_prompt_logits(Decoder& decoder, const std::vector<int32_t>& ids);

// An engine on `device` (weights in `dtype`, nullopt: auto) over `dir`, with a small KV budget unless blocks are
// given (num_device_blocks > 0; num_host_blocks >= 0), max_model_len 256 (the goldens' longest).
struct EngineSetup {
    Device device = Device::kCuda;
    std::optional<DType> dtype;
    int64_t num_device_blocks = 0;
    int64_t num_host_blocks = 0;
    int64_t max_num_batched_tokens = 8192;
    int64_t max_num_seqs = 256;
    int64_t max_model_len = 256;
    bool prefix_caching = true;
    bool enforce_eager = false;  // no CUDA graphs
};
std::unique_ptr<Engine> make_engine_on(const std::string& dir, const EngineSetup& setup);

// Greedy generation of exactly `max_tokens` tokens for each prompt, all submitted together (one batch); failures are
// test failures and give empty outputs.
std::vector<std::vector<int32_t>> greedy_tokens(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                                int64_t max_tokens);

// n token ids below vocab, a fixed pattern per seed (prompts of the executor and engine tests).
std::vector<int32_t> ids_of(int64_t n, int32_t seed, int64_t vocab);

// A fixture with its own CUDA stream (stream_, and ctx_ on it); skips where no GPU is usable.
class CudaStreamTest : public ::testing::Test {
protected:
    void SetUp() override {
        TACO_SKIP_WITHOUT_GPU();
        auto made = cuda::DeviceStream::create();
        ASSERT_TRUE(made.is_ok());
        stream_ = std::move(made).value();
        ctx_ = stream_->context(nullptr);
    }

    std::unique_ptr<cuda::DeviceStream> stream_;
    ExecContext ctx_;
};

// The builds of the skinny GEMM this GPU runs: the register build everywhere, the bulk-copy build from Hopper on.
std::vector<cuda::SkinnyTuning> skinny_gemm_builds();

// Index of the largest value (lowest index on ties) and the gap to the second largest.
size_t argmax(const std::vector<float>& v);
float top1_margin(const std::vector<float>& v);

}  // namespace taco::testing_util
