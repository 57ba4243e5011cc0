// vLLM's --device, --dtype and --load-format: where and how the model's weights are loaded (engine/model_loading.h).
// `generate`, `serve` and `bench` get them through add_engine_flags; `perplexity` adds them alone. A bad value is a
// usage error naming it; whether the device can be used is decided when the model is loaded (select_device).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/model_loading.h"
#include "model/decoder.h"

namespace taco::cli {

struct ModelLoadFlags {
    DeviceChoice device = DeviceChoice::kAuto;
    std::optional<DType> dtype;  // nullopt: auto
    LoadFormat load_format = LoadFormat::kAuto;
};

inline void add_model_load_flags(CLI::App* app, DeviceChoice& device, std::optional<DType>& dtype,
                                 LoadFormat& load_format) {
    app->add_option_function<std::string>(
           "--device",
           [&device](const std::string& value) {
               auto parsed = parse_device_choice(value);
               if (!parsed) throw CLI::ValidationError(parsed.status().message());
               device = *parsed;
           },
           "auto (CUDA when a GPU is usable, else the CPU), cpu or cuda")
        ->default_str("auto");
    app->add_option_function<std::string>(
           "--dtype",
           [&dtype](const std::string& value) {
               auto parsed = resolve_dtype(value);
               if (!parsed) throw CLI::ValidationError(parsed.status().message());
               dtype = *parsed;
           },
           "Weight and activation dtype: auto (the checkpoint's; float32 checkpoints run in bfloat16 on CUDA), "
           "bfloat16/bf16, float16/half/fp16, float32/float/fp32 (the CPU computes in float32 whatever this is)")
        ->default_str("auto");
    app->add_option_function<std::string>(
           "--load-format",
           [&load_format](const std::string& value) {
               auto parsed = parse_load_format(value);
               if (!parsed) throw CLI::ValidationError(parsed.status().message());
               load_format = *parsed;
           },
           "auto (*.safetensors, else pytorch_model*.bin), safetensors, or dummy (random weights, for benchmarks)")
        ->default_str("auto");
}

inline void add_model_load_flags(CLI::App* app, ModelLoadFlags& flags) {
    add_model_load_flags(app, flags.device, flags.dtype, flags.load_format);
}

}  // namespace taco::cli
