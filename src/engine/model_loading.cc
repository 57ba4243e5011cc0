#include "engine/model_loading.h"

#include <filesystem>

#include "core/log.h"
#include "model/decoder.h"
#ifdef TACO_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace taco {

Result<DeviceChoice> parse_device_choice(std::string_view name) {
    if (name == "auto") return DeviceChoice::kAuto;
    if (name == "cpu") return DeviceChoice::kCpu;
    if (name == "cuda") return DeviceChoice::kCuda;
    return error("--device {}: expected auto, cpu or cuda", name);
}

Result<LoadFormat> parse_load_format(std::string_view name) {
    if (name == "auto") return LoadFormat::kAuto;
    if (name == "safetensors") return LoadFormat::kSafetensors;
    if (name == "dummy") return LoadFormat::kDummy;
    return error(
        "--load-format {} is not supported: use auto (*.safetensors, else pytorch_model*.bin), safetensors or dummy",
        name);
}

const char* device_choice_name(DeviceChoice choice) {
    switch (choice) {
        case DeviceChoice::kAuto: return "auto";
        case DeviceChoice::kCpu: return "cpu";
        case DeviceChoice::kCuda: return "cuda";
    }
    return "?";
}

const char* load_format_name(LoadFormat format) {
    switch (format) {
        case LoadFormat::kAuto: return "auto";
        case LoadFormat::kSafetensors: return "safetensors";
        case LoadFormat::kDummy: return "dummy";
    }
    return "?";
}

Result<Device> select_device(DeviceChoice choice) {
    if (choice == DeviceChoice::kCpu) return Device::kCpu;
#ifdef TACO_WITH_CUDA
    const Status started = cuda::init_backend(0);
    if (started.is_ok()) return Device::kCuda;
    if (choice == DeviceChoice::kCuda) return error("--device cuda: {}; use --device cpu", started.message());
    log_info("--device auto: running on the CPU ({})", started.message());
    return Device::kCpu;
#else
    if (choice == DeviceChoice::kCuda)
        return error("--device cuda: this taco_llm was built without CUDA (build the 'cuda' preset); use --device cpu");
    return Device::kCpu;
#endif
}

namespace {

bool has_safetensors(const std::string& dir) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.path().extension() == ".safetensors") return true;
    return false;
}

}  // namespace

Result<std::unique_ptr<Decoder>> load_decoder(const std::string& dir, Device device, std::optional<DType> dtype,
                                              LoadFormat format, bool progress) {
    if (format == LoadFormat::kSafetensors && std::filesystem::is_directory(dir) && !has_safetensors(dir))
        return error(
            "--load-format safetensors: {} holds no *.safetensors file (--load-format auto also reads "
            "pytorch_model*.bin)",
            dir);
    LoadOptions options;
    options.device = device;
    options.dtype = dtype;
    options.dummy = format == LoadFormat::kDummy;
    options.progress = progress;
    return Decoder::load(dir, options);
}

}  // namespace taco
