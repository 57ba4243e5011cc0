// `taco_llm generate MODEL (--prompt TEXT | --prompt-ids 1,2,3) [sampling flags] [--json]`: offline generation.
#include <cstdio>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "exec/generator.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/command.h"
#include "tools/cli/device_option.h"

namespace taco::cli {
namespace {

struct GenerateArgs {
    std::string model;
    std::optional<std::string> prompt;
    std::string prompt_ids;
    SamplingParams sampling;
    std::optional<uint64_t> seed;
    std::string device = "cpu";
    bool json = false;
    int64_t max_model_len = 0;
    int64_t block_size = 16;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || value < 0 || value > INT32_MAX)
            return error("--prompt-ids: '{}' is not a token id (expected comma-separated non-negative integers)", item);
        ids.push_back(int32_t(value));
    }
    if (ids.empty()) return error("--prompt-ids is empty");
    return ids;
}

bool folder_has_tokenizer(const std::string& dir) {
    for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json"})
        if (file_exists(join_path(dir, name))) return true;
    return false;
}

void run_generate(const GenerateArgs& args) {
    Status device_status = check_device_available(args.device);
    if (!device_status) fail(device_status.message());
    // The model folder's tokenizer, when it has one, turns --prompt into ids and the generated ids into text.
    std::unique_ptr<Tokenizer> tokenizer;
    if (folder_has_tokenizer(args.model)) {
        auto loaded = Tokenizer::load(args.model);
        if (!loaded) fail(loaded.status().message());
        tokenizer = std::move(loaded).value();
    }
    Result<std::vector<int32_t>> ids = std::vector<int32_t>{};
    if (args.prompt) {
        if (!tokenizer) fail(args.model + ": no tokenizer (tokenizer.json, tokenizer.model or vocab.json) for --prompt; use --prompt-ids");
        ids = tokenizer->encode(*args.prompt, /*add_special_tokens=*/true);
    } else {
        ids = parse_ids(args.prompt_ids);
    }
    if (!ids) fail(ids.status().message());
    auto decoder = Decoder::load(args.model);
    if (!decoder) fail(decoder.status().message());
    SamplingParams sampling = args.sampling;
    sampling.seed = args.seed;
    GenerateOptions options;
    options.max_model_len = args.max_model_len;
    options.block_size = args.block_size;
    auto result = generate(**decoder, *ids, sampling, options);
    if (!result) fail(result.status().message());
    // As vLLM: the text skips special tokens (an EOS that ended the request is in token_ids, not in text).
    std::optional<std::string> text;
    if (tokenizer) text = tokenizer->decode(result->token_ids, /*skip_special_tokens=*/true);
    if (args.json) {
        nlohmann::json out = {{"prompt_ids", result->prompt_ids},
                              {"token_ids", result->token_ids},
                              {"text", text ? nlohmann::json(*text) : nlohmann::json(nullptr)},
                              {"finish_reason", std::string(finish_reason_name(result->finish_reason))}};
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (text) {
        std::printf("%s\n", text->c_str());
    } else {
        std::string line;
        for (int32_t id : result->token_ids) line += (line.empty() ? "" : " ") + std::to_string(id);
        std::printf("%s\n", line.c_str());
    }
}

const CommandRegistrar registrar(10, [](CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    CLI::App* sub = app.add_subcommand("generate", "Generate a continuation of one prompt (offline)");
    sub->add_option("model", args->model, "Model folder (config.json + *.safetensors)")->required();
    auto* prompt = sub->add_option("--prompt", args->prompt, "Prompt text");
    auto* prompt_ids = sub->add_option("--prompt-ids", args->prompt_ids, "Prompt token ids, comma-separated");
    prompt->excludes(prompt_ids);
    sub->add_option("--max-tokens", args->sampling.max_tokens, "Maximum number of generated tokens")
        ->capture_default_str();
    sub->add_option("--min-tokens", args->sampling.min_tokens, "EOS and stop tokens are suppressed until N tokens")
        ->capture_default_str();
    sub->add_option("--temperature", args->sampling.temperature, "Sampling temperature; 0 is greedy")
        ->capture_default_str();
    sub->add_option("--top-p", args->sampling.top_p, "Nucleus sampling mass")->capture_default_str();
    sub->add_option("--top-k", args->sampling.top_k, "Keep the k most likely tokens (0 or -1: off)")
        ->capture_default_str();
    sub->add_option("--seed", args->seed, "Seed of this request's random generator");
    sub->add_flag("--ignore-eos", args->sampling.ignore_eos, "Do not stop at the end-of-sequence token");
    sub->add_option("--device", args->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
    sub->add_flag("--json", args->json, "Print one JSON object per prompt");
    sub->add_option("--max-model-len", args->max_model_len, "Context length limit (default: from the config)");
    sub->add_option("--block-size", args->block_size, "KV cache block size in tokens (a power of two)")
        ->check(CLI::IsMember({1, 2, 4, 8, 16, 32, 64, 128}))
        ->capture_default_str();
    sub->callback([sub, args, prompt, prompt_ids] {
        if (prompt->count() == 0 && prompt_ids->count() == 0) fail("one of --prompt or --prompt-ids is required");
        run_generate(*args);
        (void)sub;
    });
});

}  // namespace
}  // namespace taco::cli
