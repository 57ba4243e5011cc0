// `taco_llm serve` argument errors (the server itself is tested in tests/server).
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace taco::testing_util {
namespace {

TEST(ServeCli, NoModelAndNoDemoModelIsAClearError) {
    CommandResult r = run_taco("serve", "", {{"TACO_LLM_DEMO_MODEL", "/nonexistent/demo"}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("TACO_LLM_DEMO_MODEL=/nonexistent/demo"), std::string::npos) << r.err;
}

TEST(ServeCli, UnknownFlagIsAnErrorNamingIt) {
    CommandResult r = run_taco("serve models/demo --no-such-flag");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE((r.out + r.err).find("--no-such-flag"), std::string::npos) << r.out << r.err;
}

TEST(ServeCli, MissingModelFolderIsAnError) {
    CommandResult r = run_taco("serve /nonexistent/model/folder");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model/folder"), std::string::npos) << r.err;
}

// `serve ARGS` exits non-zero before serving, saying `message` on stderr.
void expect_refused(const std::string& args, const std::string& message) {
    CommandResult r = run_taco("serve " + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
}

TEST(ServeCli, FlagsThatCannotServeAreRefusedAtStartup) {
    for (const char* value : {"nan", "inf", "-1"})
        expect_refused(std::string("models/demo --port 0 --kv-cache-gb ") + value,
                       "--kv-cache-gb must be a non-negative number");
    for (const char* value : {"0", "-3"})
        expect_refused(std::string("models/demo --port 0 --max-pending-requests ") + value,
                       "--max-pending-requests must be at least 1");
    expect_refused("models/demo --port 0 --shutdown-timeout nan", "--shutdown-timeout must be in [0, 86400]");
    // One of several keys empty: a bare "Bearer " would pass.
    expect_refused("models/demo --port 0 --api-key good --api-key ''", "--api-key: an empty key");
    // One key per flag: a second word is an error naming it, never a second key or a swallowed model argument.
    expect_refused("models/demo --port 0 --api-key good other", "other");
    expect_refused("--api-key good /nonexistent/model/folder", "/nonexistent/model/folder");
    expect_refused("models/demo --port 0 --structured-outputs-config '{\"backend\": \"magic\"}'", "'magic' is unknown");
    expect_refused("models/demo --port 0 --structured-outputs-config '{\"bogus\": 1}'", "'bogus' is not supported");
    expect_refused("models/demo --port 0 --structured-outputs-config '{'", "not valid JSON");
    expect_refused("models/demo --port 0 --guided-decoding-backend magic", "--guided-decoding-backend");
    // Tool calling and reasoning: the parser names are checked, and auto tool choice needs a parser (as vLLM).
    expect_refused("models/demo --port 0 --tool-call-parser granite", "--tool-call-parser 'granite'");
    expect_refused("models/demo --port 0 --enable-auto-tool-choice",
                   "--enable-auto-tool-choice needs --tool-call-parser");
    expect_refused("models/demo --port 0 --reasoning-parser magistral", "--reasoning-parser 'magistral'");
    // CORS lists are JSON lists of strings, as vLLM parses them.
    expect_refused("models/demo --port 0 --allowed-origins https://a.example", "--allowed-origins must be a JSON list");
    expect_refused("models/demo --port 0 --allowed-methods '[1]'", "--allowed-methods must be a JSON list");
    expect_refused("models/demo --port 0 --allowed-headers '[\"\"]'", "--allowed-headers: '' is not a valid entry");
    expect_refused("models/demo --port 0 --root-path api", "--root-path 'api' must start with '/'");
    expect_refused("models/demo --port 0 --max-log-len -1", "--max-log-len must be at least 0");
    expect_refused("models/demo --port 0 --uvicorn-log-level loud", "--uvicorn-log-level loud: expected critical");
    // TLS: a key without a certificate, a file that is not there, client checks without CA certificates.
    expect_refused("models/demo --port 0 --ssl-keyfile k.pem", "--ssl-keyfile needs --ssl-certfile");
    expect_refused("models/demo --port 0 --enable-ssl-refresh", "--enable-ssl-refresh: reloading TLS certificates");
    expect_refused("models/demo --port 0 --ssl-certfile /nonexistent/cert.pem", "/nonexistent/cert.pem: no such file");
    expect_refused("models/demo --port 0 --ssl-certfile models/demo/config.json --ssl-cert-reqs 2",
                   "--ssl-cert-reqs 2 checks client certificates: it needs --ssl-ca-certs");
}

// vLLM flags of features that do not exist here stop the server at start, naming the flag (never a warning that
// leaves a server which then fails or ignores what was asked).
TEST(ServeCli, FlagsOfMissingFeaturesAreErrorsNamingThem) {
    expect_refused("models/demo --port 0 --enable-lora", "--enable-lora: LoRA");
    expect_refused("models/demo --port 0 --max-loras 2", "--max-loras: LoRA");
    expect_refused("models/demo --port 0 --lora-modules a=/x", "--lora-modules: LoRA");
    expect_refused("models/demo --port 0 --max-lora-rank 8", "--max-lora-rank: LoRA");
    expect_refused("models/demo --port 0 --limit-mm-per-prompt '{}'", "--limit-mm-per-prompt");
    expect_refused("models/demo --port 0 --speculative-config '{}'", "--speculative-config: speculative decoding");
    expect_refused("models/demo --port 0 --pipeline-parallel-size 2", "--pipeline-parallel-size 2");
    expect_refused("models/demo --port 0 --data-parallel-size 2", "--data-parallel-size 2");
    expect_refused("models/demo --port 0 -q awq", "--quantization awq");
    expect_refused("models/demo --port 0 --task embed", "--task embed");
    expect_refused("models/demo --port 0 --runner pooling", "--runner pooling");
    expect_refused("models/demo --port 0 --tokenizer /other/tokenizer", "--tokenizer /other/tokenizer");
    expect_refused("models/demo --port 0 --chat-template-content-format openai", "--chat-template-content-format");
    expect_refused("models/demo --port 0 --default-chat-template-kwargs '[1]'", "--default-chat-template-kwargs");
    expect_refused("models/demo --port 0 --scheduling-policy lottery", "--scheduling-policy lottery");
    expect_refused("models/demo --port 0 --enable-log-requests --disable-log-requests", "contradict");
}

// --tokenizer-mode, revisions, --kv-cache-dtype, --max-logprobs and the flags with a neutral value only: a value that
// cannot be honoured stops the server at start, naming it.
TEST(ServeCli, TokenizerAndEngineFlagValuesThatCannotBeHonouredAreRefused) {
    expect_refused("models/demo --port 0 --tokenizer-mode mistral", "--tokenizer-mode mistral: only auto, hf and slow");
    expect_refused("models/demo --port 0 --tokenizer-mode custom", "--tokenizer-mode custom");
    expect_refused("models/demo --port 0 --tokenizer-revision v2",
                   "--tokenizer-revision v2: the tokenizer models/demo is a local folder");
    expect_refused("models/demo --port 0 --revision v2", "--revision v2: models/demo is a local folder");
    expect_refused("models/demo --port 0 --tokenizer tests/data/models/llama",
                   "--tokenizer tests/data/models/llama: the folder has no tokenizer");
    expect_refused("models/demo --port 0 --kv-cache-dtype fp8",
                   "--kv-cache-dtype fp8: fp8 KV caches are not supported");
    expect_refused("models/demo --port 0 --kv-cache-dtype int4", "--kv-cache-dtype int4: expected auto");
    // The CPU's KV cache is f32: a bf16 one cannot be had.
    expect_refused("models/demo --port 0 --device cpu --kv-cache-dtype bfloat16",
                   "--kv-cache-dtype BF16: the KV cache is kept in the activation dtype, F32 here");
    expect_refused("models/demo --port 0 --max-logprobs 21", "--max-logprobs must be in [0, 20]");
    expect_refused("models/demo --port 0 --cpu-offload-gb 4", "--cpu-offload-gb 4: offloading weights");
    expect_refused("models/demo --port 0 --distributed-executor-backend slurm", "--distributed-executor-backend slurm");
    expect_refused("models/demo --port 0 --long-prefill-token-threshold -5",
                   "--long-prefill-token-threshold must be at least 0");
}

// --max-num-partial-prefills / --max-long-partial-prefills bound the scheduler (tests/sched has their effect): a
// value that bounds nothing or contradicts the other stops the server at start, naming the flag.
TEST(ServeCli, PartialPrefillLimitsOutOfRangeAreRefused) {
    for (const char* value : {"0", "-2"}) {
        expect_refused(std::string("models/demo --port 0 --max-num-partial-prefills ") + value,
                       std::string("--max-num-partial-prefills must be at least 1, got ") + value);
        expect_refused(std::string("models/demo --port 0 --max_long_partial_prefills ") + value,
                       std::string("--max-long-partial-prefills must be at least 1, got ") + value);
    }
    expect_refused("models/demo --port 0 --max-num-partial-prefills 2 --max-long-partial-prefills 3",
                   "--max-long-partial-prefills (3) must be at most --max-num-partial-prefills (2)");
    expect_refused("models/demo --port 0 --max-num-partial-prefills 2 --no-enable-chunked-prefill",
                   "--max-num-partial-prefills 2 prefills prompts in chunks side by side: it needs chunked prefill");
    expect_refused("models/demo --port 0 --max-num-partial-prefills many", "--max-num-partial-prefills");
    CommandResult help = run_taco("serve --help");
    EXPECT_NE(help.out.find("--max-num-partial-prefills"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("no effect here: it limits how many"), std::string::npos) << help.out;
}

TEST(ServeCli, PartialPrefillLimitsWithinRangeRun) {
    CommandResult r = run_taco(
        "generate tests/data/models/llama --device cpu --prompt-ids 1,2,3 --max-tokens 2 --max-num-partial-prefills 2 "
        "--max-long-partial-prefills 1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("partial prefills at once: 2 at most, 1 of them of prompts longer than"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("no effect"), std::string::npos) << r.err;
}

TEST(ServeCli, KvCacheDtypeOfTheCacheItselfIsAccepted) {
    CommandResult r = run_taco(
        "generate tests/data/models/llama --device cpu --prompt-ids 1,2,3 --max-tokens 2 --kv-cache-dtype float32");
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Flags that only tune vLLM's own machinery are listed in --help with why they change nothing, and warn when given.
TEST(ServeCli, NoOpFlagsSayWhyInHelpAndWhenGiven) {
    CommandResult help = run_taco("serve --help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("no effect here: no code from model repositories runs here"), std::string::npos)
        << help.out;
    EXPECT_NE(help.out.find("--long-prefill-token-threshold"), std::string::npos) << help.out;
    CommandResult r = run_taco("serve /nonexistent/model/folder --trust-remote-code --compilation-config '{}'");
    EXPECT_NE(r.err.find("--trust-remote-code is accepted for vLLM compatibility; no effect here"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--compilation-config is accepted for vLLM compatibility; no effect here"), std::string::npos)
        << r.err;
}

// The neutral values of vLLM's flags for features that are not here (and the modes that are what the server does
// anyway) start the server: the run gets past the engine's start to the port, the last check.
TEST(ServeCli, NeutralValuesOfVllmFlagsStart) {
    CommandResult r = run_taco(
        "serve models/demo --port -1 -q none --task generate --runner generate --data-parallel-size 1 "
        "--pipeline-parallel-size 1 --tensor_parallel_size 1 --tokenizer-mode slow --chat-template-content-format "
        "string --distributed-executor-backend mp --cpu-offload-gb 0 --kv-cache-dtype auto -O 3");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--port -1 is out of range"), std::string::npos) << r.err;
    for (const char* mode : {"auto", "hf"}) {
        CommandResult m = run_taco(std::string("serve models/demo --port -1 --tokenizer-mode ") + mode);
        EXPECT_NE(m.err.find("--port -1 is out of range"), std::string::npos) << mode << ": " << m.err;
    }
}

// argparse takes every long flag with underscores too: the same checks answer for --max_pending_requests.
TEST(ServeCli, UnderscoreSpellingsAreTheSameFlags) {
    expect_refused("models/demo --port 0 --max_pending_requests 0", "--max-pending-requests must be at least 1");
    expect_refused("models/demo --port 0 --pipeline_parallel_size=2", "--pipeline-parallel-size 2");
    CommandResult r = run_taco("serve models/demo --no_such_flag");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE((r.out + r.err).find("--no-such-flag"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace taco::testing_util
