// engine/prompts_file: `taco_llm generate --prompts-file` lines on arbitrary bytes. Nothing may crash; an invalid
// file is an error naming its line; the inputs of a valid one have sampling parameters that validate or say why not.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/check.h"
#include "engine/prompts_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    auto inputs = taco::parse_prompts_lines(in, "prompts.jsonl", taco::SamplingParams());
    if (!inputs) {
        TACO_CHECK(inputs.status().message().find("prompts.jsonl:") != std::string::npos);
        return 0;
    }
    for (const taco::GenerationInput& input : *inputs) (void)input.params.validate(6144);
    return 0;
}
