// Device choice, load format and the engine's device checks: parsing, --device auto falling back to the CPU where no
// GPU is usable (every CUDA build on a CPU machine, every CPU build), --device cuda there being an error saying why,
// --load-format safetensors refusing a folder of .bin files, and the GPU-only flag on the CPU.
#include "engine/model_loading.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "model/decoder.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/device_info.h"
#endif

namespace taco {
namespace {

bool gpu_visible() {
#ifdef TACO_WITH_CUDA
    return !cuda::list_devices().empty();
#else
    return false;
#endif
}

std::string error_of(const Status& status) { return status.is_ok() ? "<ok>" : status.message(); }

TEST(ModelLoading, DeviceChoicesAndLoadFormatsParseAndNameBadValues) {
    EXPECT_EQ(*parse_device_choice("auto"), DeviceChoice::kAuto);
    EXPECT_EQ(*parse_device_choice("cpu"), DeviceChoice::kCpu);
    EXPECT_EQ(*parse_device_choice("cuda"), DeviceChoice::kCuda);
    EXPECT_EQ(parse_device_choice("gpu").status().message(), "--device gpu: expected auto, cpu or cuda");
    EXPECT_EQ(*parse_load_format("auto"), LoadFormat::kAuto);
    EXPECT_EQ(*parse_load_format("safetensors"), LoadFormat::kSafetensors);
    EXPECT_EQ(*parse_load_format("dummy"), LoadFormat::kDummy);
    for (const char* other : {"pt", "npcache", "gguf", "bitsandbytes", ""})
        EXPECT_NE(parse_load_format(other).status().message().find("is not supported: use auto"), std::string::npos)
            << other;
    for (DeviceChoice c : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kCuda})
        EXPECT_EQ(*parse_device_choice(device_choice_name(c)), c);
    for (LoadFormat f : {LoadFormat::kAuto, LoadFormat::kSafetensors, LoadFormat::kDummy})
        EXPECT_EQ(*parse_load_format(load_format_name(f)), f);
}

TEST(ModelLoading, AutoIsTheCpuWithoutAUsableGpuAndCudaIsAnErrorThere) {
    EXPECT_EQ(*select_device(DeviceChoice::kCpu), Device::kCpu);
    if (gpu_visible()) {
        EXPECT_EQ(*select_device(DeviceChoice::kAuto), Device::kCuda);
        EXPECT_EQ(*select_device(DeviceChoice::kCuda), Device::kCuda);
        return;
    }
    EXPECT_EQ(*select_device(DeviceChoice::kAuto), Device::kCpu);
    const auto cuda = select_device(DeviceChoice::kCuda);
    ASSERT_FALSE(cuda.is_ok());
    EXPECT_EQ(cuda.status().message().rfind("--device cuda: ", 0), 0u) << cuda.status().message();
    EXPECT_NE(cuda.status().message().find("use --device cpu"), std::string::npos) << cuda.status().message();
}

TEST(ModelLoading, SafetensorsFormatRefusesAFolderOfBinFilesAndAutoReadsThem) {
    const std::string bin = testing_util::model_dir("llama_bin");
    const auto refused = load_decoder(bin, Device::kCpu, std::nullopt, LoadFormat::kSafetensors);
    ASSERT_FALSE(refused.is_ok());
    EXPECT_NE(refused.status().message().find("holds no *.safetensors file"), std::string::npos);
    EXPECT_TRUE(load_decoder(bin, Device::kCpu, std::nullopt, LoadFormat::kAuto).is_ok());
    EXPECT_TRUE(
        load_decoder(testing_util::model_dir("llama"), Device::kCpu, std::nullopt, LoadFormat::kSafetensors).is_ok());
}

TEST(ModelLoading, DummyFormatAndDtypeReachTheLoader) {
    const auto dummy = load_decoder(testing_util::model_dir("llama"), Device::kCpu, DType::kF16, LoadFormat::kDummy);
    ASSERT_TRUE(dummy.is_ok()) << dummy.status().message();
    EXPECT_EQ((*dummy)->weight_dtype(), DType::kF16);
    EXPECT_EQ((*dummy)->device(), Device::kCpu);
}

TEST(EngineConfigDevice, GpuMemoryUtilizationIsCheckedAndIsAnErrorWithDeviceCpu) {
    EngineConfig config;
    config.model_dir = testing_util::model_dir("llama");
    EXPECT_EQ(error_of(config.validate()), "<ok>");
    for (double bad : {0.0, 1.5, -1.0}) {
        config.gpu_memory_utilization = bad;
        EXPECT_NE(error_of(config.validate()).find("--gpu-memory-utilization must be in (0, 1]"), std::string::npos);
    }
    config.gpu_memory_utilization = 0.5;
    EXPECT_EQ(error_of(config.validate()), "<ok>");
    EXPECT_EQ(error_of(config.validate_for(Device::kCuda)), "<ok>");
    config.device = DeviceChoice::kAuto;
    EXPECT_EQ(error_of(config.validate_for(Device::kCpu)), "<ok>");  // a warning: auto fell back to the CPU
    config.device = DeviceChoice::kCpu;
    EXPECT_NE(error_of(config.validate_for(Device::kCpu)).find("--device cpu runs on the CPU"), std::string::npos);
    auto engine = Engine::create(config);
    ASSERT_FALSE(engine.is_ok());
    EXPECT_NE(engine.status().message().find("--gpu-memory-utilization sizes the KV cache in GPU memory"),
              std::string::npos);
    config.gpu_memory_utilization.reset();
    config.host_cache_gb = -1;
    EXPECT_NE(error_of(config.validate()).find("--swap-space (--host-cache-gb)"), std::string::npos);
}

TEST(EngineConfigLimits, StepSizesHaveADocumentedMaximum) {
    EngineConfig config;
    config.model_dir = testing_util::model_dir("llama");
    config.max_num_batched_tokens = int64_t(1) << 40;
    EXPECT_NE(error_of(config.validate()).find("--max-num-batched-tokens must be in [1, 1048576]"), std::string::npos);
    config.max_num_batched_tokens = int64_t(1) << 20;
    EXPECT_EQ(error_of(config.validate()), "<ok>");
    config.max_num_seqs = 1000000;
    EXPECT_NE(error_of(config.validate()).find("--max-num-seqs must be in [1, 16384]"), std::string::npos);
    config.max_num_seqs = 256;
    config.max_model_len = int64_t(1) << 40;
    EXPECT_NE(error_of(config.validate()).find("--max-model-len must be at most"), std::string::npos);
}

// A context length within limits::kMaxModelPositions but past what the CPU's KV budget holds for one request is a
// startup error naming the flags, before any buffer is sized for it (the rotary tables alone of 2^30 positions
// took tens of GiB and aborted in the allocator).
TEST(EngineConfigLimits, AContextTheKvCacheCannotHoldIsRefusedBeforeAnyBufferIsSized) {
    EngineConfig config;
    config.model_dir = testing_util::model_dir("llama");
    config.device = DeviceChoice::kCpu;
    config.max_model_len = int64_t(1) << 30;
    const auto engine = Engine::create(config);
    ASSERT_FALSE(engine.is_ok());
    EXPECT_NE(engine.status().message().find("too few for one request of --max-model-len 1073741824"),
              std::string::npos)
        << engine.status().message();
    EXPECT_NE(engine.status().message().find("--kv-cache-gb"), std::string::npos) << engine.status().message();
}

}  // namespace
}  // namespace taco
