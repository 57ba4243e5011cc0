#include "engine/prompts_file.h"

#include <cstdint>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_util.h"
#include "engine/sampling_json.h"

namespace taco {

using json = nlohmann::json;

Result<std::vector<GenerationInput>> read_prompts_file(const std::string& path, const SamplingParams& defaults) {
    std::ifstream in(path);
    if (!in) return error("{}: cannot open file", path);
    return parse_prompts_lines(in, path, defaults);
}

Result<std::vector<GenerationInput>> parse_prompts_lines(std::istream& in, const std::string& source,
                                                         const SamplingParams& defaults) {
    std::vector<GenerationInput> inputs;
    std::string line;
    for (int line_number = 1; std::getline(in, line); ++line_number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = fmt::format("{}:{}", source, line_number);
        auto parsed = parse_json(line);
        if (!parsed) return parsed.status().with_context(where);
        const json& object = *parsed;
        if (!object.is_object()) return error("{}: each line must be a JSON object", where);
        GenerationInput input;
        input.params = defaults;
        for (const auto& [key, value] : object.items()) {
            if (key == "prompt") {
                if (!value.is_string()) return error("{}: 'prompt' must be a string", where);
                input.prompt = value.get<std::string>();
            } else if (key == "prompt_ids") {
                if (!value.is_array()) return error("{}: 'prompt_ids' must be a list of token ids", where);
                for (const json& id : value) {
                    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
                        return error("{}: 'prompt_ids' holds {}, not a token id", where, json_excerpt(id));
                    input.prompt_ids.push_back(id.get<int32_t>());
                }
            } else if (!is_sampling_key(key)) {
                return error("{}: unknown field '{}'", where, key);
            }
        }
        if (!input.prompt && object.find("prompt_ids") == object.end())
            return error("{}: needs 'prompt' or 'prompt_ids'", where);
        TACO_RETURN_IF_ERROR(apply_sampling_json(object, input.params).with_context(where));
        inputs.push_back(std::move(input));
    }
    return inputs;
}

}  // namespace taco
