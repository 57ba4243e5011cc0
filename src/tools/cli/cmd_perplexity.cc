// `taco_llm perplexity MODEL --text-file F [--window N] [--stride S] [--json] [--device D] [--dtype T]
// [--load-format F]`: perplexity of a text file
// under the model, with transformers' sliding-window method (exec/perplexity.h). The text is tokenized with
// the model folder's tokenizer and its default special tokens (transformers' add_special_tokens=True).
// Prints `tokens <count> perplexity <value>`, or one JSON object with --json.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "engine/model_loading.h"
#include "exec/perplexity.h"
#include "model/decoder.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/command.h"
#include "tools/cli/model_load_flags.h"

namespace taco::cli {
namespace {

struct PerplexityArgs {
    std::string model_dir;
    std::string text_file;
    PerplexityOptions options;
    ModelLoadFlags load;
    bool json_output = false;
};

void run_perplexity(const PerplexityArgs& args) {
    auto device = select_device(args.load.device);
    if (!device) fail(device.status().message());
    auto text = read_text_file(args.text_file);
    if (!text) fail(text.status().message());
    auto tokenizer = Tokenizer::load(args.model_dir);
    if (!tokenizer) fail(tokenizer.status().message());
    auto ids = (*tokenizer)->encode(*text, /*add_special_tokens=*/true);
    if (!ids) fail(fmt::format("{}: {}", args.text_file, ids.status().message()));
    auto decoder = load_decoder(args.model_dir, *device, args.load.dtype, args.load.load_format, /*progress=*/true);
    if (!decoder) fail(decoder.status().message());
    auto result = sliding_window_perplexity(**decoder, *ids, args.options);
    if (!result) fail(fmt::format("{}: {}", args.text_file, result.status().message()));
    if (args.json_output) {
        nlohmann::json out = {{"tokens", result->num_tokens},   {"scored_tokens", result->num_scored_tokens},
                              {"windows", result->num_windows}, {"window", result->window},
                              {"stride", result->stride},       {"nll_sum", result->nll_sum},
                              {"mean_nll", result->mean_nll()}, {"perplexity", result->perplexity()}};
        std::printf("%s\n", out.dump().c_str());
    } else {
        std::printf("tokens %lld perplexity %.6f\n", static_cast<long long>(result->num_tokens), result->perplexity());
    }
    std::fflush(stdout);
}

const CommandRegistrar registrar(30, [](CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    CLI::App* sub = app.add_subcommand("perplexity", "Perplexity of a text file (sliding windows, as transformers)");
    sub->add_option("model", args->model_dir, "Model folder (config.json, *.safetensors, tokenizer)")->required();
    sub->add_option("--text-file", args->text_file, "UTF-8 text file to score")->required();
    sub->add_option("--window", args->options.window, "Tokens per window (default: min(max model length, 1024))");
    sub->add_option("--stride", args->options.stride, "Tokens between window starts (default: window / 2)");
    sub->add_flag("--json", args->json_output, "Print one JSON object");
    add_model_load_flags(sub, args->load);
    sub->callback([args] { run_perplexity(*args); });
});

}  // namespace
}  // namespace taco::cli
