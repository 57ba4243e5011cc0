#include "cuda_test_util.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/model_loading.h"
#include "kernels/cuda/cuda_backend.h"

namespace taco::testing_util {

bool cuda_usable(std::string* reason) {
    const Status status = cuda::init_backend(0);
    if (!status.is_ok() && reason != nullptr) *reason = status.message();
    return status.is_ok();
}

Tensor to_device(const TensorView& host) {
    Tensor d =
        Tensor::empty(std::span<const int64_t>(host.shape.data(), size_t(host.ndim)), host.dtype, MemoryKind::kDevice);
    EXPECT_EQ(cudaMemcpy(d.view().data, host.data, host.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}

Tensor to_host(const TensorView& device) {
    Tensor h = Tensor::empty(std::span<const int64_t>(device.shape.data(), size_t(device.ndim)), device.dtype,
                             MemoryKind::kHost);
    EXPECT_EQ(cudaMemcpy(h.view().data, device.data, device.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
}

std::unique_ptr<Decoder> load_on(const std::string& dir, Device device, std::optional<DType> dtype) {
    LoadOptions options;
    options.device = device;
    options.dtype = dtype;
    auto decoder = Decoder::load(dir, options);
    EXPECT_TRUE(decoder.is_ok()) << dir << ": " << decoder.status().message();
    return decoder.is_ok() ? std::move(decoder).value() : nullptr;
}

std::vector<float> last_prompt_logits(Decoder& decoder, const std::vector<int32_t>& ids) {
    const int64_t n = int64_t(ids.size()), block_size = 16, blocks = (n + block_size - 1) / block_size;
    ExecutorOptions options;
    options.max_num_tokens = n;
    options.max_num_sequences = 1;
    options.max_model_len = n;
    options.block_size = block_size;
    ForwardExecutor executor(decoder, options);
    KvCacheTensors kv =
        KvCacheTensors::allocate(decoder.config(), blocks, block_size, executor.activation_dtype(),
                                 decoder.device() == Device::kCuda ? MemoryKind::kDevice : MemoryKind::kHost);
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    std::iota(table.rbegin(), table.rend(), 0);  // logical order differs from physical
    RunnerSequence seq{ids, 0, n, table, true};
    seq.max_length = n;
    executor.execute({&seq, 1}, kv);
    const TensorView logits = executor.host_logits();
    return std::vector<float>(logits.row<float>(0), logits.row<float>(0) + logits.shape[1]);
}

std::unique_ptr<Engine> make_engine_on(const std::string& dir, const EngineSetup& setup) {
    EngineConfig config;
    config.model_dir = dir;
    config.device = setup.device == Device::kCuda ? DeviceChoice::kCuda : DeviceChoice::kCpu;
    config.dtype = setup.dtype;
    config.max_model_len = setup.max_model_len;
    config.max_num_batched_tokens = setup.max_num_batched_tokens;
    config.max_num_seqs = setup.max_num_seqs;
    config.enable_prefix_caching = setup.prefix_caching;
    config.num_device_blocks = setup.num_device_blocks;
    config.num_host_blocks = setup.num_host_blocks;
    config.enforce_eager = setup.enforce_eager;
    if (setup.num_device_blocks == 0) config.kv_cache_gb = 0.25;  // small: engines are made per model and test
    auto engine = Engine::create(config);
    EXPECT_TRUE(engine.is_ok()) << dir << ": " << engine.status().message();
    return engine.is_ok() ? std::move(engine).value() : nullptr;
}

std::vector<std::vector<int32_t>> greedy_tokens(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                                int64_t max_tokens) {
    std::vector<GenerationInput> inputs;
    for (const auto& prompt : prompts) {
        GenerationInput input;
        input.prompt_ids = prompt;
        input.params.temperature = 0;
        input.params.max_tokens = max_tokens;
        input.params.min_tokens = max_tokens;
        inputs.push_back(std::move(input));
    }
    std::vector<std::vector<int32_t>> tokens;
    for (auto& out : engine.generate(std::move(inputs))) {
        EXPECT_TRUE(out.is_ok()) << out.status().message();
        tokens.push_back(out.is_ok() ? out->samples.at(0).token_ids : std::vector<int32_t>{});
    }
    return tokens;
}

std::vector<int32_t> ids_of(int64_t n, int32_t seed, int64_t vocab) {
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((seed * 131 + i * 17) % vocab));
    return ids;
}

size_t argmax(const std::vector<float>& v) { return size_t(std::max_element(v.begin(), v.end()) - v.begin()); }

float top1_margin(const std::vector<float>& v) {
    const size_t top = argmax(v);
    float second = -INFINITY;
    for (size_t i = 0; i < v.size(); ++i)
        if (i != top) second = std::max(second, v[i]);
    return v[top] - second;
}

std::vector<cuda::SkinnyTuning> skinny_gemm_builds() {
    std::vector<cuda::SkinnyTuning> all = {{cuda::SkinnyTuning::Kernel::kRegisters, 0, 0}};
    if (cuda::skinny_bulk_available()) all.push_back({cuda::SkinnyTuning::Kernel::kBulkCopy, 0, 0});
    return all;
}

}  // namespace taco::testing_util
