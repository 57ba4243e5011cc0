// vLLM's device and memory flags on `generate`, `serve` and `perplexity`: --device auto|cpu|cuda, --dtype,
// --load-format, --gpu-memory-utilization, --swap-space / --host-cache-gb and --num-gpu-blocks-override. Bad values
// are errors naming them; without a usable GPU (run_taco hides any GPU from the binary), --device auto runs on the
// CPU, --device cuda is an error, and the GPU-only flag is an error with --device cpu and a warning with auto. `bench`
// with dummy weights runs from config.json alone.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_runner.h"

namespace taco::testing_util {
namespace {

std::string generate(const std::string& flags, const std::string& model = "llama") {
    return "generate " + golden_model_dir(model) + " --prompt-ids 1,2,3 --max-tokens 4 --temperature 0 " + flags;
}

void expect_error(const std::string& args, const std::string& message) {
    CommandResult r = run_taco(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
}

TEST(DeviceFlagsCli, AutoWithoutAUsableGpuRunsOnTheCpu) {
    CommandResult cpu = run_taco(generate("--device cpu"));
    CommandResult automatic = run_taco(generate("--device auto"));
    CommandResult unspecified = run_taco(generate(""));
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
    EXPECT_EQ(automatic.out, cpu.out);
    EXPECT_EQ(unspecified.out, cpu.out);
    EXPECT_NE(automatic.err.find("KV cache: 2048 blocks of 16 tokens in F32 on the cpu"), std::string::npos)
        << automatic.err;
#ifdef TACO_WITH_CUDA
    EXPECT_NE(automatic.err.find("--device auto: running on the CPU (no usable CUDA device"), std::string::npos)
        << automatic.err;
#endif
}

TEST(DeviceFlagsCli, CudaWithoutAUsableGpuIsAClearError) {
    expect_error(generate("--device cuda"), "--device cuda: ");
    expect_error("perplexity " + golden_model_dir("llama") + " --text-file /dev/null --device cuda", "--device cuda: ");
}

TEST(DeviceFlagsCli, BadValuesAreErrorsNamingThem) {
    expect_error(generate("--device tpu"), "--device tpu: expected auto, cpu or cuda");
    expect_error(generate("--dtype float64"), "--dtype 'float64': expected auto, bfloat16");
    expect_error(generate("--load-format pt"), "--load-format pt is not supported");
    expect_error(generate("--load-format safetensors", "llama_bin"), "holds no *.safetensors file");
    expect_error(generate("--gpu-memory-utilization 1.5"), "--gpu-memory-utilization must be in (0, 1], got 1.5");
    expect_error(generate("--gpu-memory-utilization 0"), "--gpu-memory-utilization must be in (0, 1], got 0");
    expect_error(generate("--num-gpu-blocks-override 0"), "--num-gpu-blocks-override must be positive, got 0");
    expect_error(generate("--swap-space -1"), "--swap-space (--host-cache-gb) must be a non-negative number");
    expect_error("serve " + golden_model_dir("llama") + " --load-format npcache", "--load-format npcache");
    expect_error("perplexity " + golden_model_dir("llama") + " --text-file /dev/null --dtype f8", "--dtype 'f8'");
}

TEST(DeviceFlagsCli, GpuMemoryUtilizationOnTheCpuIsAnErrorWhenAskedForAndAWarningUnderAuto) {
    expect_error(generate("--device cpu --gpu-memory-utilization 0.8"),
                 "--gpu-memory-utilization sizes the KV cache in GPU memory and --device cpu runs on the CPU");
    CommandResult r = run_taco(generate("--gpu-memory-utilization 0.8"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("--gpu-memory-utilization 0.8 has no effect on the CPU"), std::string::npos) << r.err;
}

TEST(DeviceFlagsCli, SwapSpaceAndHostCacheGbAreOneSetting) {
    // llama: 2 layers x K,V x 16 tokens x 2 heads x 16 dims x f32 = 8192 bytes a block; 0.001 GiB = 131 blocks.
    for (const char* flags : {"--device cpu --swap-space 0.001", "--device cpu --host-cache-gb 0.001",
                              "--device cpu --swap-space 0.001 --host-cache-gb 0.001"}) {
        CommandResult r = run_taco(generate(flags));
        ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
        EXPECT_NE(r.err.find("host tier 131 blocks"), std::string::npos) << flags << ": " << r.err;
    }
    expect_error(generate("--swap-space 1 --host-cache-gb 2"),
                 "--host-cache-gb 2 disagrees with 1: --swap-space and --host-cache-gb are the same setting");
    CommandResult none = run_taco(generate("--device cpu"));
    EXPECT_NE(none.err.find("host tier 0 blocks"), std::string::npos) << none.err;  // the CPU's default
}

TEST(DeviceFlagsCli, NumGpuBlocksOverrideSetsTheDeviceTier) {
    CommandResult r = run_taco(generate("--device cpu --num-gpu-blocks-override 9"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("KV cache: 9 blocks of 16 tokens"), std::string::npos) << r.err;
    expect_error(generate("--device cpu --num-gpu-blocks-override 7"), "the KV cache holds 7 blocks");
}

TEST(DeviceFlagsCli, DtypeAndLoadFormatAreHonouredOnTheCpu) {
    CommandResult plain = run_taco(generate("--device cpu"));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    // The checkpoint is bf16: --dtype bfloat16 serves it as stored; float32 widens it exactly (f32 activations).
    for (const char* dtype : {"bfloat16", "bf16", "float32", "float"}) {
        CommandResult r = run_taco(generate(std::string("--device cpu --dtype ") + dtype));
        ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
        EXPECT_EQ(r.out, plain.out) << dtype;
    }
    CommandResult half = run_taco(generate("--device cpu --dtype half"));
    EXPECT_EQ(half.exit_code, 0) << half.err;
    CommandResult dummy = run_taco(generate("--device cpu --load-format dummy"));
    ASSERT_EQ(dummy.exit_code, 0) << dummy.err;
    EXPECT_FALSE(dummy.out.empty());
    CommandResult safetensors = run_taco(generate("--device cpu --load-format safetensors"));
    ASSERT_EQ(safetensors.exit_code, 0) << safetensors.err;
    EXPECT_EQ(safetensors.out, plain.out);
}

TEST(DeviceFlagsCli, BenchWithDummyWeightsNeedsOnlyTheConfig) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(::testing::TempDir()) / "taco_cli_config_only";
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(golden_model_dir("llama") + "/config.json", dir / "config.json");
    const std::string bench =
        "bench latency " + dir.string() + " --device cpu --input-len 4 --output-len 2 --num-iters 1";
    CommandResult r = run_taco(bench + " --load-format dummy");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("dummy weights without a checkpoint: weight traffic unknown"), std::string::npos) << r.out;
    expect_error(bench, "no model.safetensors");
}

// The chart beside the JSON, read back by Python's zlib (an independent reader: chunk CRCs, the zlib stream, the
// scanlines' size).
TEST(DeviceFlagsCli, BenchBatchPlotsDecodeTokensPerSecondBesideTheJson) {
    const std::string json = ::testing::TempDir() + "/taco_bench_plot.json";
    const std::string png = ::testing::TempDir() + "/taco_bench_plot.png";
    std::remove(png.c_str());
    const std::string bench = "bench batch " + golden_model_dir("llama") +
                              " --device cpu --input-len 4 --output-len 2 --batch-sizes 1,2,4 --plot";
    CommandResult r = run_taco(bench + " --output-json " + json);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("chart: " + png), std::string::npos) << r.out;
    const std::string check =
        "python3 -c \"import struct, sys, zlib\n"
        "b = open(sys.argv[1], 'rb').read()\n"
        "assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
        "at, idat, size = 8, b'', None\n"
        "while at < len(b):\n"
        "    n, = struct.unpack('>I', b[at:at + 4]); kind = b[at + 4:at + 8]; data = b[at + 8:at + 8 + n]\n"
        "    assert struct.unpack('>I', b[at + 8 + n:at + 12 + n])[0] == zlib.crc32(kind + data)\n"
        "    if kind == b'IHDR': size = struct.unpack('>II', data[:8])\n"
        "    if kind == b'IDAT': idat += data\n"
        "    at += 12 + n\n"
        "raw = zlib.decompress(idat)\n"
        "assert len(raw) == (size[0] * 3 + 1) * size[1], len(raw)\n"
        "print(size[0], size[1])\" " +
        png;
    FILE* pipe = popen(check.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char line[64] = {};
    const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
    EXPECT_EQ(pclose(pipe), 0);
    ASSERT_TRUE(read);
    EXPECT_EQ(std::string(line), "640 400\n");
    expect_error("bench batch " + golden_model_dir("llama") + " --device cpu --batch-sizes 1 --plot",
                 "--plot needs --output-json");
}

TEST(DeviceFlagsCli, BenchPrintsTheCostPerMillionOutputTokensForAnHourlyPrice) {
    const std::string bench = "bench latency " + golden_model_dir("llama") +
                              " --device cpu --input-len 4 --output-len 3 --num-iters 1 --gpu-hourly-cost 3.6";
    const std::string json = ::testing::TempDir() + "/taco_bench_cost.json";
    CommandResult r = run_taco(bench + " --output-json " + json);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("per million output tokens at $3.60 per GPU hour"), std::string::npos) << r.out;
    // $3.60 an hour is $0.001 a second: the cost of a million tokens is 1000 / (output tokens per second).
    std::ifstream file(json);
    const nlohmann::json j = nlohmann::json::parse(file);
    EXPECT_EQ(j["gpu_hourly_cost_usd"].get<double>(), 3.6);
    const nlohmann::json& run = j["runs"][0];
    // The step thread's ms per step by phase, in the JSON and on the table.
    for (const char* phase : {"schedule", "forward", "sample", "output", "text"})
        EXPECT_GE(run["step_ms"][phase].get<double>(), 0.0) << phase;
    EXPECT_NE(r.out.find("per step: schedule "), std::string::npos) << r.out;
    EXPECT_NEAR(run["usd_per_million_output_tokens"].get<double>(), 1000.0 / run["output_tokens_per_s"].get<double>(),
                1e-9 * run["usd_per_million_output_tokens"].get<double>());
    for (const char* bad : {"0", "-2", "nan", "inf", "x"})
        expect_error("bench latency " + golden_model_dir("llama") + " --gpu-hourly-cost " + bad, "--gpu-hourly-cost");
}

}  // namespace
}  // namespace taco::testing_util
