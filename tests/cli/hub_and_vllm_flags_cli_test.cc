// `taco_llm serve|generate` with a hub id (through a mock hub on loopback, the HF_* environment and --hf-token), and
// vLLM's `-tp` spelling of --tensor-parallel-size.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "../server/mock_hub.h"
#include "cli_runner.h"

namespace taco::testing_util {
namespace {
namespace fs = std::filesystem;

fs::path fresh_cache(const std::string& name) {
    fs::path dir = fs::temp_directory_path() / ("taco_cli_hub_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

TEST(VllmFlagsCli, TpIsTensorParallelSizeAndOnlyOneIsSupported) {
    for (const char* flag : {"-tp 2", "-tp=2", "--tensor-parallel-size 2"}) {
        CommandResult r = run_taco(std::string("serve models/demo ") + flag);
        EXPECT_EQ(r.exit_code, 1) << flag;
        EXPECT_NE(r.err.find("--tensor-parallel-size 2"), std::string::npos) << flag << ": " << r.err;
        EXPECT_NE(r.err.find("only 1"), std::string::npos) << flag << ": " << r.err;
    }
}

TEST(VllmFlagsCli, TpWithoutAValueNamesTheLongFlag) {
    CommandResult r = run_taco("serve models/demo -tp");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE((r.out + r.err).find("--tensor-parallel-size"), std::string::npos) << r.out << r.err;
}

TEST(HubCli, GenerateDownloadsAHubIdFromHfEndpointIntoHfHubCache) {
    server::testing::MockHub hub;
    server::testing::MockHub::Repo repo;
    repo.commit = "89abcdef0123456789abcdef0123456789abcdef";
    for (const char* name : {"config.json", "generation_config.json", "model.safetensors"})
        repo.files[name] = [&] {
            std::ifstream in(golden_model_dir("llama") + "/" + name, std::ios::binary);
            return std::string(std::istreambuf_iterator<char>(in), {});
        }();
    hub.add_repo("acme/tiny-llama", repo);
    const fs::path cache = fresh_cache("generate");
    const std::vector<std::pair<std::string, std::string>> env = {
        {"HF_ENDPOINT", hub.endpoint()}, {"HF_HUB_CACHE", cache.string()}, {"HF_HUB_OFFLINE", "0"}};
    CommandResult r = run_taco("generate acme/tiny-llama --prompt-ids 1,2,3 --max-tokens 2", "", env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("downloaded model.safetensors"), std::string::npos) << r.err;  // a line per file
    const fs::path snapshot = cache / "models--acme--tiny-llama" / "snapshots" / repo.commit;
    EXPECT_TRUE(fs::is_symlink(snapshot / "model.safetensors"));

    // The same command again is served from the cache, even with the hub gone and offline mode on.
    hub.stop();
    CommandResult again = run_taco("generate acme/tiny-llama --prompt-ids 1,2,3 --max-tokens 2", "",
                                   {{"HF_HUB_CACHE", cache.string()}, {"HF_HUB_OFFLINE", "1"}});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, r.out);
    fs::remove_all(cache);
}

TEST(HubCli, OfflineModeWithAnUncachedIdIsAClearError) {
    const fs::path cache = fresh_cache("offline");
    CommandResult r =
        run_taco("serve acme/not-cached", "",
                 {{"HF_HUB_CACHE", cache.string()}, {"HF_HUB_OFFLINE", "1"}, {"HF_ENDPOINT", "http://127.0.0.1:1"}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("acme/not-cached"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("HF_HUB_OFFLINE"), std::string::npos) << r.err;
    fs::remove_all(cache);
}

TEST(HubCli, ServeDownloadDirAndRevisionChooseTheCacheAndTheRef) {
    const fs::path cache = fresh_cache("download_dir");
    CommandResult r = run_taco("serve acme/not-cached --download-dir " + cache.string() + " --revision v1.0", "",
                               {{"HF_HUB_OFFLINE", "1"}, {"HF_HUB_CACHE", "/nonexistent/elsewhere"}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find((cache / "models--acme--not-cached").string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("at revision v1.0"), std::string::npos) << r.err;
    fs::remove_all(cache);
}

// --tokenizer with a hub id and --tokenizer-revision: the tokenizer's repository is fetched at that revision into
// the cache and loaded (the run then stops at the port, after the engine and its tokenizer were made).
TEST(HubCli, ServeTokenizerHubIdIsDownloadedAtTheTokenizerRevision) {
    server::testing::MockHub hub;
    server::testing::MockHub::Repo repo;
    repo.commit = "0123456789abcdef0123456789abcdef01234567";
    auto read = [](const std::string& file) {
        std::ifstream in(file, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    repo.files["config.json"] = read(golden_model_dir("llama") + "/config.json");
    repo.files["tokenizer.json"] = read(std::string(TACO_SOURCE_DIR) + "/tests/data/tokenizer/unigram/tokenizer.json");
    hub.add_repo("acme/tokenizer", repo);
    const fs::path cache = fresh_cache("tokenizer");
    const std::vector<std::pair<std::string, std::string>> env = {
        {"HF_ENDPOINT", hub.endpoint()}, {"HF_HUB_CACHE", cache.string()}, {"HF_HUB_OFFLINE", "0"}};
    CommandResult r =
        run_taco("serve " + golden_model_dir("llama") + " --tokenizer acme/tokenizer --tokenizer-revision v2 --port -1",
                 "", env);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("downloaded tokenizer.json"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--port -1 is out of range"), std::string::npos) << r.err;  // past the engine's start
    std::ifstream ref(cache / "models--acme--tokenizer" / "refs" / "v2");
    std::string commit;
    ref >> commit;
    EXPECT_EQ(commit, repo.commit);
    fs::remove_all(cache);
}

// --hf-token: the token a gated repository needs, as HF_TOKEN would give it (without it the error says so).
TEST(HubCli, ServeHfTokenOpensAGatedRepository) {
    server::testing::MockHub hub;
    server::testing::MockHub::Repo repo;
    repo.commit = "fedcba9876543210fedcba9876543210fedcba98";
    repo.token = "secret";
    for (const char* name : {"config.json", "generation_config.json", "model.safetensors"})
        repo.files[name] = [&] {
            std::ifstream in(golden_model_dir("llama") + "/" + name, std::ios::binary);
            return std::string(std::istreambuf_iterator<char>(in), {});
        }();
    hub.add_repo("acme/gated", repo);
    const fs::path cache = fresh_cache("hf_token");
    // No ambient token: an empty HF_TOKEN and a token file that is not there.
    const std::vector<std::pair<std::string, std::string>> env = {{"HF_ENDPOINT", hub.endpoint()},
                                                                  {"HF_HUB_CACHE", cache.string()},
                                                                  {"HF_HUB_OFFLINE", "0"},
                                                                  {"HF_TOKEN", ""},
                                                                  {"HF_TOKEN_PATH", "/nonexistent/token"}};
    CommandResult denied = run_taco("serve acme/gated --port -1", "", env);
    EXPECT_EQ(denied.exit_code, 1);
    EXPECT_NE(denied.err.find("HF_TOKEN"), std::string::npos) << denied.err;
    CommandResult r = run_taco("serve acme/gated --hf-token secret --port -1", "", env);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("downloaded model.safetensors"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--port -1 is out of range"), std::string::npos) << r.err;  // past the engine's start
    fs::remove_all(cache);
}

}  // namespace
}  // namespace taco::testing_util
