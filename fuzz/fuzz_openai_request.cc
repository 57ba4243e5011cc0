// server/openai_request: the /v1/completions and /v1/chat/completions body parsers (and the chat rendering they
// share with /tokenize) on arbitrary bodies, against an engine of the demo model (models/demo) made once. The first
// byte picks the endpoint, the rest is the body, read as the server reads it (request_json, then in key order).
// Nothing may crash or abort; an invalid body must be a 4xx naming a message.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/check.h"
#include "core/json_util.h"
#include "engine/engine.h"
#include "server/openai_request.h"
#include "server/request_json.h"
#include "server/structured_request.h"
#include "server/tool_request.h"

namespace {

struct Fixture {
    std::unique_ptr<taco::Engine> engine;
    std::optional<taco::ChatTemplate> chat_template;
    taco::server::StructuredOutputsConfig structured;
    taco::server::ToolServerOptions tools;
    taco::server::ParseContext context;

    Fixture() {
        taco::EngineConfig config;
        config.device = taco::DeviceChoice::kCpu;
        config.model_dir = std::string(TACO_SOURCE_DIR) + "/models/demo";
        config.max_model_len = 512;
        auto created = taco::Engine::create(config);
        TACO_CHECK_MSG(created.is_ok(), "{}", created.status().message());
        engine = std::move(created).value();
        auto from_dir = taco::ChatTemplate::from_dir(config.model_dir);
        TACO_CHECK_MSG(from_dir.is_ok(), "{}", from_dir.status().message());
        chat_template.emplace(std::move(*from_dir));
        context.engine = engine.get();
        context.chat_template = &*chat_template;
        context.model_names = {"demo"};
        context.max_sequences_per_request = 64;
        context.structured_outputs = &structured;
        context.tools = &tools;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Fixture* fixture = new Fixture();  // never destroyed: the engine's thread outlives the fuzzing loop
    if (size == 0) return 0;
    const int endpoint = data[0] % 3;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    taco::server::ApiError error;
    auto body = taco::server::parse_request_json(text, error);
    if (!body) {
        TACO_CHECK(error.status >= 400 && error.status < 500 && !error.message.empty());
        return 0;
    }
    auto ordered = taco::parse_ordered_json(text);
    TACO_CHECK(ordered.is_ok());
    const nlohmann::ordered_json* ordered_body = &*ordered;
    bool ok = false;
    if (endpoint == 0) {
        ok = taco::server::parse_completion_request(*body, fixture->context, error, ordered_body).has_value();
    } else if (endpoint == 1) {
        ok = taco::server::parse_chat_request(*body, fixture->context, error, ordered_body).has_value();
    } else {
        ok = taco::server::render_chat(*body, fixture->context, error, ordered_body).has_value();
    }
    if (!ok)
        TACO_CHECK_MSG(error.status >= 400 && error.status < 600 && !error.message.empty(), "status {}: '{}'",
                       error.status, error.message);
    return 0;
}
