// Request fields that vLLM (or the OpenAI API) defines and taco-llm does not implement (Python logits processors;
// beam search is server/beam_search_request.h): a request that sets one to anything but its neutral value gets a
// 400 naming the field, rather than an answer that quietly ignores it (a client written for vLLM would otherwise
// trust the processor to have run). The neutral values
// (false, 0, null, an empty list) are what clients send when they mean "not used", and are accepted.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace taco::server {

struct UnimplementedField {
    std::string field;    // the request's key, the error's `param`
    std::string message;  // what is not supported, for the 400
};

// The first such field set in `body` (a chat or completions request), or nullopt.
std::optional<UnimplementedField> unimplemented_vllm_field(const nlohmann::json& body);

}  // namespace taco::server
