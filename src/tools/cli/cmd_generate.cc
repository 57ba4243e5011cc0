// `taco_llm generate [MODEL] (--prompt TEXT | --prompt-ids 1,2,3 | --prompts-file F.jsonl) [sampling flags]`:
// offline generation through the engine; every prompt runs together (continuous batching) and results are
// printed one per line in input order.
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_util.h"
#include "engine/engine.h"
#include "engine/prompts_file.h"
#include "engine/sampling_defaults.h"
#include "engine/sampling_json.h"
#include "tools/cli/command.h"
#include "tools/cli/demo_model.h"
#include "tools/cli/engine_flags.h"
#include "tools/cli/hf_overrides.h"
#include "tools/cli/model_source.h"

namespace taco::cli {
namespace {

using json = nlohmann::json;

struct GenerateArgs {
    EngineConfig engine;
    std::optional<std::string> prompt;
    std::string prompt_ids;
    std::string prompts_file;
    SamplingParams sampling;
    std::string generation_config = "auto";
    std::string override_generation_config;  // JSON object
    std::string hf_overrides;                // JSON object
    // The sampling flags a generation_config.json default may fill when they are not given.
    CLI::Option *temperature = nullptr, *top_p = nullptr, *top_k = nullptr, *min_p = nullptr, *max_tokens = nullptr;
    bool json_output = false;
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

json sample_json(const SampleOutput& s, const Tokenizer* tokenizer) {
    json out = {{"index", s.index},
                {"token_ids", s.token_ids},
                {"text", tokenizer ? json(s.text) : json(nullptr)},
                {"finish_reason", s.finish_reason ? std::string(finish_reason_name(*s.finish_reason)) : ""}};
    if (!s.stop_reason.empty()) out["stop_reason"] = s.stop_reason;
    if (s.stop_token_id) out["stop_reason"] = *s.stop_token_id;
    if (!s.logprobs.empty()) {
        json lps = json::array();
        for (const SampleLogprobs& lp : s.logprobs) {
            json top = json::array();
            for (const TokenLogprob& t : lp.top) top.push_back({t.token, t.logprob});
            lps.push_back({{"token", lp.sampled.token}, {"logprob", lp.sampled.logprob}, {"top", top}});
        }
        out["logprobs"] = lps;
        out["cumulative_logprob"] = s.cumulative_logprob;
    }
    return out;
}

void run_generate(GenerateArgs& args, bool have_prompt, bool have_ids) {
    nlohmann::json overrides;
    if (!args.override_generation_config.empty()) {
        auto parsed = parse_json(args.override_generation_config);
        if (!parsed) fail(fmt::format("--override-generation-config is not valid JSON: {}", parsed.status().message()));
        overrides = *parsed;
    }
    auto generation = SamplingDefaults::load(args.generation_config, args.engine.model_dir, overrides);
    if (!generation) fail(generation.status().message());
    for (auto [option, value] : {std::pair{args.temperature, &generation->temperature},
                                 std::pair{args.top_p, &generation->top_p}, std::pair{args.min_p, &generation->min_p}})
        if (option && option->count() > 0) value->reset();
    if (args.top_k && args.top_k->count() > 0) generation->top_k.reset();
    if (args.max_tokens && args.max_tokens->count() > 0) generation->max_tokens.reset();
    generation->apply(args.sampling);
    const SamplingParams& defaults = args.sampling;

    std::vector<GenerationInput> inputs;
    if (!args.prompts_file.empty()) {
        auto read = read_prompts_file(args.prompts_file, defaults);
        if (!read) fail(read.status().message());
        inputs = std::move(read).value();
    } else if (have_prompt) {
        inputs.push_back({args.prompt, {}, defaults});
    } else if (have_ids) {
        auto ids = parse_ids(args.prompt_ids);
        if (!ids) fail(ids.status().message());
        inputs.push_back({std::nullopt, *ids, defaults});
    }
    args.engine.show_load_progress = true;
    auto engine = create_engine_with_hf_overrides(args.engine, args.hf_overrides);
    auto outputs = engine->generate(std::move(inputs));
    const Tokenizer* tokenizer = engine->tokenizer();
    bool any_error = false;
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i]) {
            any_error = true;
            if (args.json_output) std::printf("%s\n", json({{"error", outputs[i].status().message()}}).dump().c_str());
            std::fprintf(stderr, "error: prompt %zu: %s\n", i + 1, outputs[i].status().message().c_str());
            continue;
        }
        const RequestOutput& out = *outputs[i];
        if (args.json_output) {
            json line = sample_json(out.samples.at(0), tokenizer);
            line.erase("index");
            line["prompt_ids"] = out.prompt_ids;
            if (!out.prompt_logprobs.empty()) {  // prompt_logprobs in a --prompts-file line: null for the first token
                json lps = json::array({nullptr});
                for (const SampleLogprobs& lp : out.prompt_logprobs) {
                    json top = json::array();
                    for (const TokenLogprob& t : lp.top) top.push_back({t.token, t.logprob});
                    lps.push_back({{"token", lp.sampled.token},
                                   {"logprob", lp.sampled.logprob},
                                   {"rank", lp.sampled_rank},
                                   {"top", top}});
                }
                line["prompt_logprobs"] = lps;
            }
            if (out.samples.size() > 1) {
                json all = json::array();
                for (const SampleOutput& s : out.samples) all.push_back(sample_json(s, tokenizer));
                line["outputs"] = all;
            }
            std::printf("%s\n", line.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
        } else {
            for (const SampleOutput& s : out.samples) {
                if (tokenizer) {
                    std::printf("%s\n", s.text.c_str());
                } else {
                    std::string ids;
                    for (int32_t id : s.token_ids) ids += (ids.empty() ? "" : " ") + std::to_string(id);
                    std::printf("%s\n", ids.c_str());
                }
            }
        }
    }
    std::fflush(stdout);
    if (any_error) throw CLI::RuntimeError(1);
}

const CommandRegistrar registrar(10, [](CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    CLI::App* sub = app.add_subcommand("generate", "Generate continuations of prompts offline (all batched together)");
    sub->add_option("model", args->engine.model_dir, "Model folder or hub id (default: the built-in demo model)");
    auto* prompt = sub->add_option("--prompt", args->prompt, "Prompt text (needs the model's tokenizer)");
    auto* prompt_ids = sub->add_option("--prompt-ids", args->prompt_ids, "Prompt token ids, comma-separated");
    auto* prompts_file = sub->add_option("--prompts-file", args->prompts_file,
                                         "JSON lines: {\"prompt\": ...} or {\"prompt_ids\": [...]}, plus optional "
                                         "sampling fields");
    prompt->excludes(prompt_ids)->excludes(prompts_file);
    prompt_ids->excludes(prompts_file);
    SamplingParams& s = args->sampling;
    args->max_tokens =
        sub->add_option("--max-tokens", s.max_tokens, "Maximum number of generated tokens")->capture_default_str();
    sub->add_option("--min-tokens", s.min_tokens, "EOS and stop tokens are suppressed until N tokens")
        ->capture_default_str();
    args->temperature =
        sub->add_option("--temperature", s.temperature, "Sampling temperature; 0 is greedy")->capture_default_str();
    args->top_p = sub->add_option("--top-p", s.top_p, "Nucleus sampling mass")->capture_default_str();
    args->top_k =
        sub->add_option("--top-k", s.top_k, "Keep the k most likely tokens (0 or -1: off)")->capture_default_str();
    args->min_p =
        sub->add_option("--min-p", s.min_p, "Drop tokens below min_p x the top probability")->capture_default_str();
    sub->add_option("--generation-config", args->generation_config,
                    "Defaults for the sampling flags not given: 'auto' (the model's generation_config.json), 'vllm' "
                    "(none) or a folder")
        ->capture_default_str();
    sub->add_option("--hf-overrides", args->hf_overrides,
                    "JSON object merged into the model's config.json before the model is built (nested objects "
                    "merge), e.g. '{\"max_position_embeddings\": 4096}'");
    sub->add_option("--override-generation-config", args->override_generation_config,
                    "JSON object laid over the --generation-config defaults (alone with 'vllm'): temperature, top_p, "
                    "top_k, min_p, repetition_penalty, max_new_tokens (the default --max-tokens)");
    sub->add_option("--n", s.n, "Samples per prompt")->capture_default_str();
    sub->add_flag("--ignore-eos", s.ignore_eos, "Do not stop at the end-of-sequence token");
    sub->add_flag("--json", args->json_output, "Print one JSON object per prompt");
    add_engine_flags(sub, args->engine);
    sub->callback([args, prompt, prompt_ids, prompts_file] {
        if (prompt->count() + prompt_ids->count() + prompts_file->count() == 0)
            fail("one of --prompt, --prompt-ids or --prompts-file is required");
        if (args->engine.model_dir.empty()) {
            auto dir = find_demo_model();
            if (!dir) fail(dir.status().message());
            args->engine.model_dir = *dir;
        } else {
            args->engine.model_dir = resolve_model_or_fail(args->engine.model_dir);
        }
        run_generate(*args, prompt->count() > 0, prompt_ids->count() > 0);
    });
});

}  // namespace
}  // namespace taco::cli
