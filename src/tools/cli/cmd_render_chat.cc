// `taco_llm render-chat DIR`: renders a model's chat template over a JSON array of messages read from stdin and
// prints the prompt exactly (no trailing newline added), as transformers' apply_chat_template(tokenize=False).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "core/file_util.h"
#include "core/json_util.h"
#include "tokenizer/chat_template.h"
#include "tools/cli/command.h"

namespace taco::cli {
namespace {

struct RenderChatOptions {
    std::string dir;
    bool add_generation_prompt = false;
    std::string date_string;
    std::string chat_template_kwargs;
    std::string tools_path;
    int64_t now_epoch_seconds = -1;
};

nlohmann::ordered_json parse_json_or_fail(const std::string& text, const std::string& what) {
    auto parsed = parse_ordered_json(text);
    if (!parsed) fail(what + ": " + parsed.status().message());
    return std::move(*parsed);
}

void run_render_chat(const RenderChatOptions& opts) {
    auto chat_template = ChatTemplate::from_dir(opts.dir);
    if (!chat_template.is_ok()) fail(chat_template.status().message());
    ChatTemplateInputs inputs;
    std::string stdin_text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    inputs.messages = parse_json_or_fail(stdin_text, "stdin (messages)");
    inputs.add_generation_prompt = opts.add_generation_prompt;
    if (!opts.date_string.empty()) inputs.date_string = opts.date_string;
    if (!opts.chat_template_kwargs.empty())
        inputs.extra = parse_json_or_fail(opts.chat_template_kwargs, "--chat-template-kwargs");
    if (!opts.tools_path.empty()) {
        auto text = read_text_file(opts.tools_path);
        if (!text.is_ok()) fail(text.status().message());
        inputs.tools = parse_json_or_fail(*text, opts.tools_path);
    }
    if (opts.now_epoch_seconds >= 0) inputs.now_epoch_seconds = opts.now_epoch_seconds;
    auto prompt = chat_template->render(inputs);
    if (!prompt.is_ok()) fail(prompt.status().message());
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
    std::fflush(stdout);
}

const CommandRegistrar kRegistrar(60, [](CLI::App& app) {
    auto opts = std::make_shared<RenderChatOptions>();
    CLI::App* cmd = app.add_subcommand("render-chat", "Render a model's chat template over messages (JSON on stdin)");
    cmd->add_option("dir", opts->dir, "Model or tokenizer folder (tokenizer_config.json / chat_template.jinja)")
        ->required();
    cmd->add_flag("--add-generation-prompt", opts->add_generation_prompt, "Append the assistant turn header");
    cmd->add_option("--date-string", opts->date_string, "Value of the template variable date_string");
    cmd->add_option("--chat-template-kwargs", opts->chat_template_kwargs,
                    "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
    cmd->add_option("--tools", opts->tools_path, "JSON file holding the tools array");
    cmd->add_option("--now", opts->now_epoch_seconds, "Epoch seconds that strftime_now() reads (default: the clock)");
    cmd->callback([opts] { run_render_chat(*opts); });
});

}  // namespace
}  // namespace taco::cli
