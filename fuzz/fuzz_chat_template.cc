// The chat-template engine (tokenizer/jinja): an input is a template, then a NUL byte and the JSON of the messages
// (a fixed conversation when there is none). Parsing and rendering must end with a string or a Status, in bounded
// memory and time (core/limits.h's template limits), whatever the template does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json_util.h"
#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    auto chat = taco::ChatTemplate::from_string(input.substr(0, nul), "<s>", "</s>");
    if (!chat.is_ok()) return 0;
    taco::ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}, {"role": "user", "content": [{"type": "text", "text": "x"}]}])");
    if (nul != std::string::npos) {
        auto messages = taco::parse_ordered_json(input.substr(nul + 1));
        if (messages.is_ok()) inputs.messages = std::move(*messages);
    }
    inputs.add_generation_prompt = size % 2 == 0;
    inputs.now_epoch_seconds = 0;
    (void)chat->render(inputs);
    return 0;
}
