// Maps an HF `architectures` name to the function that builds its ArchSpec from the config.
#pragma once

#include <string>
#include <vector>

#include "model/arch_spec.h"

namespace taco {

using ArchSpecBuilder = Result<ArchSpec> (*)(const ModelConfig& config);

// Error naming the architecture and listing the supported ones when unknown.
Result<ArchSpec> arch_spec_for(const ModelConfig& config);
std::vector<std::string> supported_architectures();

}  // namespace taco
