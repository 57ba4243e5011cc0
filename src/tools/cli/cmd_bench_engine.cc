// `taco_llm bench latency|batch|throughput [MODEL]`: the offline workloads of BENCHMARKS.md through the engine
// (engine/offline_bench.h), printed as a table and, with --output-json, written as JSON.
//   latency     one request (--input-len 1024, --output-len 128), --num-iters runs after one warm-up
//   batch       --batch-sizes 1,2,4,8,32,64 requests at once (1024 / 400 tokens)
//   throughput  --num-prompts 1000 requests at once (1000 / 1000 tokens)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/bench_plot.h"
#include "engine/offline_bench.h"
#include "model/model_config.h"
#include "tools/cli/command.h"
#include "tools/cli/demo_model.h"
#include "tools/cli/engine_flags.h"

namespace taco::cli {
namespace {

enum class Workload { kLatency, kBatch, kThroughput };

struct BenchEngineArgs {
    Workload workload = Workload::kLatency;
    EngineConfig engine;
    int64_t input_len = 1024;
    int64_t output_len = 128;
    int64_t num_iters = 3;
    int64_t num_prompts = 1000;
    std::vector<int64_t> batch_sizes = {1, 2, 4, 8, 32, 64};
    std::string output_json;
    double gpu_hourly_cost = 0;  // dollars per hour of the machine; 0: no cost figure
    bool plot = false;           // batch: a PNG of decode tok/s against batch size beside the JSON
};

// The PNG beside the JSON: its name with the extension replaced (FILE.json -> FILE.png).
std::string plot_path_for(const std::string& json) {
    std::filesystem::path p(json);
    p.replace_extension(".png");
    return p.string();
}

// Dollars per million output tokens at `hourly` dollars per hour of the machine: the brief's $/M-token figure.
double usd_per_million_output_tokens(double hourly, double output_tokens_per_s) {
    return output_tokens_per_s > 0 ? hourly / 3600.0 / output_tokens_per_s * 1e6 : 0;
}

std::string_view workload_name(Workload w) {
    switch (w) {
        case Workload::kLatency: return "latency";
        case Workload::kBatch: return "batch";
        case Workload::kThroughput: return "throughput";
    }
    return "?";
}

// `f` is absent for --load-format dummy on a folder without a checkpoint (nothing to count the weights from): the
// weight-traffic and FLOP rates are then null.
nlohmann::json run_json(const BenchRun& r, const std::optional<ModelFootprint>& f) {
    const double decode_steps_per_s =
        r.elapsed_s > r.prefill_done_s ? double(r.decode_steps) / (r.elapsed_s - r.prefill_done_s) : 0;
    return {{"requests", r.num_requests},
            {"prompt_tokens", r.prompt_tokens},
            {"output_tokens", r.output_tokens},
            {"elapsed_s", r.elapsed_s},
            {"ttft_mean_ms", r.mean_ttft_s * 1e3},
            {"ttft_p50_ms", r.p50_ttft_s * 1e3},
            {"ttft_p99_ms", r.p99_ttft_s * 1e3},
            {"decode_tokens_per_s", r.decode_tokens_per_s()},
            {"output_tokens_per_s", r.output_tokens_per_s()},
            {"total_tokens_per_s", r.total_tokens_per_s()},
            {"engine_steps", r.engine_steps},
            // The step thread's ms per step by phase; schedule and output are host work the device waits for, and text
            // is too unless async scheduling overlaps it with the next step.
            {"step_ms",
             {{"schedule", r.step_schedule_ms},
              {"forward", r.step_forward_ms},
              {"sample", r.step_sample_ms},
              {"output", r.step_output_ms},
              {"text", r.step_text_ms}}},
            // Weights read per decode step (KV traffic not counted) and matrix FLOPs of every token processed.
            {"decode_weight_gb_per_s",
             f ? nlohmann::json(decode_steps_per_s * double(f->weight_bytes_per_step) / 1e9) : nlohmann::json()},
            {"matrix_tflop_per_s",
             f ? nlohmann::json(r.elapsed_s > 0 ? 2.0 * double(f->matrix_params) *
                                                      double(r.prompt_tokens + r.output_tokens) / r.elapsed_s / 1e12
                                                : 0.0)
               : nlohmann::json()}};
}

void print_row(const std::string& label, nlohmann::json& j, double hourly) {
    auto rate = [&](const char* key, int decimals) {
        return j[key].is_null() ? std::string("-") : fmt::format("{:.{}f}", j[key].get<double>(), decimals);
    };
    std::printf("%-12s %8lld %9.2f %9.2f %12.1f %12.1f %12.1f %9s %9s\n", label.c_str(),
                static_cast<long long>(j["requests"].get<int64_t>()), j["ttft_mean_ms"].get<double>(),
                j["ttft_p99_ms"].get<double>(), j["decode_tokens_per_s"].get<double>(),
                j["output_tokens_per_s"].get<double>(), j["total_tokens_per_s"].get<double>(),
                rate("decode_weight_gb_per_s", 2).c_str(), rate("matrix_tflop_per_s", 3).c_str());
    const nlohmann::json& step = j["step_ms"];
    std::printf("%-12s per step: schedule %.3f ms, forward %.3f ms, sample %.3f ms, output %.3f ms, text %.3f ms\n", "",
                step["schedule"].get<double>(), step["forward"].get<double>(), step["sample"].get<double>(),
                step["output"].get<double>(), step["text"].get<double>());
    if (hourly > 0) {
        const double usd = usd_per_million_output_tokens(hourly, j["output_tokens_per_s"].get<double>());
        j["usd_per_million_output_tokens"] = usd;
        std::printf("%-12s $%.4f per million output tokens at $%.2f per GPU hour\n", "", usd, hourly);
    }
}

BenchRun run_or_fail(Engine& engine, const BenchWorkload& w) {
    auto run = run_bench_workload(engine, w);
    if (!run) fail(run.status().message());
    return *run;
}

void run_bench_engine(BenchEngineArgs& args) {
    if (args.engine.model_dir.empty()) {
        auto dir = find_demo_model();
        if (!dir) fail(dir.status().message());
        args.engine.model_dir = *dir;
    }
    auto config = ModelConfig::load_dir(args.engine.model_dir);
    if (!config) fail(config.status().message());
    // Counted from the checkpoint as stored (its dtype, not --dtype's). Dummy weights need no checkpoint, and then
    // nothing can be counted: the rates that need it print as "-".
    std::optional<ModelFootprint> footprint;
    if (auto counted = model_footprint(args.engine.model_dir, config->tie_word_embeddings)) {
        footprint = *counted;
    } else if (args.engine.load_format != LoadFormat::kDummy) {
        fail(counted.status().message());
    }
    if (args.plot && args.output_json.empty())
        fail("--plot needs --output-json FILE.json (the chart is written beside it, as FILE.png)");
    if (args.workload == Workload::kBatch) {
        int64_t largest = 1;
        for (int64_t b : args.batch_sizes) largest = std::max(largest, b);
        args.engine.max_num_seqs = std::max(args.engine.max_num_seqs, largest);
    }
    args.engine.show_load_progress = true;
    auto engine = Engine::create(args.engine);
    if (!engine) fail(engine.status().message());

    nlohmann::json out = {
        {"workload", workload_name(args.workload)},
        {"model", args.engine.model_dir},
        {"input_len", args.input_len},
        {"output_len", args.output_len},
        {"weight_bytes_per_step", footprint ? nlohmann::json(footprint->weight_bytes_per_step) : nlohmann::json()},
        {"matrix_params", footprint ? nlohmann::json(footprint->matrix_params) : nlohmann::json()},
        {"gpu_hourly_cost_usd", args.gpu_hourly_cost > 0 ? nlohmann::json(args.gpu_hourly_cost) : nlohmann::json()},
        {"async_scheduling", (*engine)->async_scheduling()},
        {"runs", nlohmann::json::array()}};
    const std::string weights =
        footprint ? fmt::format("{:.1f} MB of weights per step", double(footprint->weight_bytes_per_step) / 1e6)
                  : std::string("dummy weights without a checkpoint: weight traffic unknown");
    std::printf("%s: %s, %lld prompt / %lld output tokens, %s\n", std::string(workload_name(args.workload)).c_str(),
                args.engine.model_dir.c_str(), static_cast<long long>(args.input_len),
                static_cast<long long>(args.output_len), weights.c_str());
    std::printf("%-12s %8s %9s %9s %12s %12s %12s %9s %9s\n", "run", "requests", "TTFT ms", "p99 ms", "decode tok/s",
                "output tok/s", "total tok/s", "GB/s", "TFLOP/s");
    uint64_t seed = args.engine.seed;
    auto workload = [&](int64_t requests) { return BenchWorkload{requests, args.input_len, args.output_len, seed++}; };
    switch (args.workload) {
        case Workload::kLatency: {
            run_or_fail(**engine, workload(1));  // warm-up
            for (int64_t i = 0; i < args.num_iters; ++i) {
                auto j = run_json(run_or_fail(**engine, workload(1)), footprint);
                print_row(fmt::format("iter {}", i), j, args.gpu_hourly_cost);
                out["runs"].push_back(j);
            }
            break;
        }
        case Workload::kBatch: {
            run_or_fail(**engine, workload(1));  // warm-up
            for (int64_t b : args.batch_sizes) {
                auto j = run_json(run_or_fail(**engine, workload(b)), footprint);
                j["batch_size"] = b;
                print_row(fmt::format("bs={}", b), j, args.gpu_hourly_cost);
                out["runs"].push_back(j);
            }
            break;
        }
        case Workload::kThroughput: {
            auto j = run_json(run_or_fail(**engine, workload(args.num_prompts)), footprint);
            print_row("all", j, args.gpu_hourly_cost);
            out["runs"].push_back(j);
            break;
        }
    }
    std::fflush(stdout);
    if (!args.output_json.empty()) {
        std::ofstream file(args.output_json);
        file << out.dump(2) << "\n";
        if (!file) fail(fmt::format("--output-json {}: cannot write the file", args.output_json));
    }
    if (args.plot) {
        std::vector<BatchPoint> points;
        for (const nlohmann::json& run : out["runs"])
            points.push_back({double(run["batch_size"].get<int64_t>()), run["decode_tokens_per_s"].get<double>()});
        const std::string path = plot_path_for(args.output_json);
        std::ofstream png(path, std::ios::binary);
        png << batch_chart_png(points);
        if (!png) fail(fmt::format("--plot: cannot write {}", path));
        std::printf("chart: %s\n", path.c_str());
    }
}

void add_workload(CLI::App* bench, Workload workload, const char* help, int64_t input_len, int64_t output_len) {
    auto args = std::make_shared<BenchEngineArgs>();
    args->workload = workload;
    args->input_len = input_len;
    args->output_len = output_len;
    CLI::App* sub = bench->add_subcommand(std::string(workload_name(workload)), help);
    sub->add_option("model", args->engine.model_dir, "Model folder (default: the built-in demo model)");
    sub->add_option("--input-len", args->input_len, "Prompt tokens per request (random ids)")->capture_default_str();
    sub->add_option("--output-len", args->output_len, "Generated tokens per request (EOS ignored)")
        ->capture_default_str();
    if (workload == Workload::kLatency)
        sub->add_option("--num-iters", args->num_iters, "Measured runs after one warm-up")->capture_default_str();
    if (workload == Workload::kBatch) {
        sub->add_option("--batch-sizes", args->batch_sizes, "Requests at once, one run each")
            ->delimiter(',')
            ->check(CLI::Validator(
                [](const std::string& text) -> std::string {
                    char* end = nullptr;
                    const long long v = std::strtoll(text.c_str(), &end, 10);
                    return end != text.c_str() && *end == '\0' && v > 0 ? ""
                                                                        : "each must be a positive count, got " + text;
                },
                "N,N,..."))
            ->capture_default_str();
        sub->add_flag("--plot", args->plot,
                      "Also draw decode tok/s against batch size as a PNG beside --output-json (FILE.png)");
    }
    if (workload == Workload::kThroughput)
        sub->add_option("--num-prompts", args->num_prompts, "Requests, all submitted at once")->capture_default_str();
    sub->add_option("--output-json", args->output_json, "Also write the figures to this JSON file");
    sub->add_option("--gpu-hourly-cost", args->gpu_hourly_cost,
                    "Dollars per hour of the machine: also print (and write) the cost per million output tokens")
        ->check(CLI::Validator(
            [](const std::string& text) -> std::string {
                const double v = std::strtod(text.c_str(), nullptr);
                return std::isfinite(v) && v > 0 ? "" : "must be a positive number of dollars, got " + text;
            },
            "DOLLARS"));
    add_engine_flags(sub, args->engine);
    sub->callback([args] { run_bench_engine(*args); });
}

const CommandRegistrar registrar(41, [](CLI::App& app) {
    CLI::App* bench = bench_subcommand(app);
    add_workload(bench, Workload::kLatency, "One request: TTFT and decode rate (BENCHMARKS.md 'latency')", 1024, 128);
    add_workload(bench, Workload::kBatch, "Batches of requests at once (BENCHMARKS.md 'batch')", 1024, 400);
    add_workload(bench, Workload::kThroughput, "Many requests at once (BENCHMARKS.md 'throughput')", 1000, 1000);
});

}  // namespace
}  // namespace taco::cli
