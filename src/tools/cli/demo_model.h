// The built-in demo model: `taco_llm generate` and `taco_llm serve` with no MODEL use models/demo, the
// small model we train ourselves (tools/demo_model/). It ships beside the binary rather than inside it, so the
// weights stay mmapped from disk like any other checkpoint.
#pragma once

#include <string>

#include "core/status.h"

namespace taco::cli {

// The demo model's folder, first match of: $TACO_LLM_DEMO_MODEL; <bin>/../share/taco-llm/models/demo (after
// `cmake --install`); models/demo in the binary's folder or the nearest folder above it that has one (a build
// folder anywhere in the source tree: build/taco_llm, build/<preset>/taco_llm); the source tree the binary was
// built from (a build folder outside it). An error lists where it looked.
Result<std::string> find_demo_model();

}  // namespace taco::cli
