// Where and how a model is loaded (vLLM's --device, --dtype and --load-format): the device choice, resolved against
// this build and machine, and Decoder::load with the matching LoadOptions. Engine::create and `taco_llm perplexity`
// load through these.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/status.h"

namespace taco {

class Decoder;  // model/decoder.h

enum class DeviceChoice : uint8_t {
    kAuto,  // CUDA when this build has it and a GPU is usable, else the CPU
    kCpu,
    kCuda,
};

enum class LoadFormat : uint8_t {
    kAuto,         // *.safetensors, else pytorch_model*.bin
    kSafetensors,  // *.safetensors only
    kDummy,        // random weights from config.json alone (benchmarks)
};

// "auto" | "cpu" | "cuda"; anything else is an error naming the value.
Result<DeviceChoice> parse_device_choice(std::string_view name);
// "auto" | "safetensors" | "dummy"; vLLM's other formats (pt, npcache, gguf, bitsandbytes, ...) are errors naming
// the value and what to use instead.
Result<LoadFormat> parse_load_format(std::string_view name);
const char* device_choice_name(DeviceChoice choice);
const char* load_format_name(LoadFormat format);

// Resolves the choice and starts the backend it picks (the CUDA backend on device 0). cpu: the CPU. cuda: CUDA, or
// an error saying why it cannot be used (a CPU-only build, no driver or no GPU). auto: CUDA when usable, else the
// CPU, logging why.
Result<Device> select_device(DeviceChoice choice);

// Decoder::load of `dir` onto `device`, weights in `dtype` (nullopt: auto, the loader's rule) from `format`, with a
// progress bar of the upload on stderr when `progress`. --load-format safetensors with no *.safetensors in the
// folder is an error.
Result<std::unique_ptr<Decoder>> load_decoder(const std::string& dir, Device device, std::optional<DType> dtype,
                                              LoadFormat format, bool progress = false);

}  // namespace taco
