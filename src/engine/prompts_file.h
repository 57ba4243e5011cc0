// `taco_llm generate --prompts-file F.jsonl`: one JSON object per line, {"prompt": text} or {"prompt_ids": [ids]},
// with optional sampling fields (engine/sampling_json.h) over the flags' defaults. Blank lines are skipped; errors
// name `source:line`. Untrusted input: fuzz/fuzz_prompts_file.cc runs it on arbitrary bytes.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace taco {

Result<std::vector<GenerationInput>> read_prompts_file(const std::string& path, const SamplingParams& defaults);
// The lines of `in`; `source` names them in errors.
Result<std::vector<GenerationInput>> parse_prompts_lines(std::istream& in, const std::string& source,
                                                         const SamplingParams& defaults);

}  // namespace taco
