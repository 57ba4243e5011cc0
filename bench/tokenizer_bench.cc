// Tokenizer throughput on one thread: encode English prose with the Llama-3 tokenizer (MB/s counter), decode it
// back, and load the 128k vocabulary. Prose: the license texts every Debian system ships in
// /usr/share/common-licenses, or $TACO_PROSE_DIR (the same text bench/tokenizer_bench_hf.{mjs,py} measure). Tokenizers
// come from scripts/setup_test_data.sh. Run: bench/run_tokenizer_bench.sh
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "core/file_util.h"
#include "tokenizer/tokenizer.h"

namespace {

const char* kLicenses[] = {"GPL-3", "GPL-2", "LGPL-2.1", "GFDL-1.3", "Apache-2.0", "MPL-2.0", "Artistic", "CC0-1.0"};

// TACO_TOKENIZER_DIR, else the repository's .cache (found from this file's path, as CMake compiles it).
std::string tokenizer_dir() {
    if (const char* env = std::getenv("TACO_TOKENIZER_DIR")) return env;
    std::string file = __FILE__;
    std::string root = file.substr(0, file.rfind("/bench/"));
    return root + "/.cache/tokenizers/llama3";
}

const std::vector<std::string>& prose() {
    static const std::vector<std::string> texts = [] {
        std::vector<std::string> out;
        const char* dir = std::getenv("TACO_PROSE_DIR");  // default: Debian's copy of the texts
        for (const char* name : kLicenses) {
            auto text = taco::read_text_file(std::string(dir ? dir : "/usr/share/common-licenses") + "/" + name);
            if (text.is_ok()) out.push_back(std::move(text).value());
        }
        return out;
    }();
    return texts;
}

const taco::Tokenizer& tokenizer() {
    static std::unique_ptr<taco::Tokenizer> tok = [] {
        auto t = taco::Tokenizer::load(tokenizer_dir());
        if (!t.is_ok()) {
            std::fprintf(stderr, "%s (run scripts/setup_test_data.sh)\n", t.status().message().c_str());
            std::exit(1);
        }
        return std::move(t).value();
    }();
    return *tok;
}

void BM_EncodeLlama3Prose(benchmark::State& state) {
    const auto& tok = tokenizer();
    int64_t bytes = 0, tokens = 0;
    for (auto _ : state) {
        for (const auto& text : prose()) {
            auto ids = tok.encode(text, false);
            benchmark::DoNotOptimize(ids);
            bytes += static_cast<int64_t>(text.size());
            tokens += static_cast<int64_t>(ids->size());
        }
    }
    state.SetBytesProcessed(bytes);
    state.counters["MB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e6, benchmark::Counter::kIsRate);
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodeLlama3Prose)->Unit(benchmark::kMillisecond);

void BM_DecodeLlama3Prose(benchmark::State& state) {
    const auto& tok = tokenizer();
    std::vector<std::vector<int32_t>> all;
    int64_t bytes = 0;
    for (const auto& text : prose()) all.push_back(*tok.encode(text, false));
    for (auto _ : state) {
        for (size_t i = 0; i < all.size(); ++i) {
            std::string text = tok.decode(all[i]);
            benchmark::DoNotOptimize(text);
            bytes += static_cast<int64_t>(text.size());
        }
    }
    state.counters["MB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecodeLlama3Prose)->Unit(benchmark::kMillisecond);

void BM_LoadLlama3(benchmark::State& state) {
    for (auto _ : state) {
        auto t = taco::Tokenizer::load(tokenizer_dir());
        if (!t.is_ok()) state.SkipWithError(t.status().message().c_str());
        benchmark::DoNotOptimize(t);
    }
}
BENCHMARK(BM_LoadLlama3)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
