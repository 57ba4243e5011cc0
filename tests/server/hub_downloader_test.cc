#include "server/hub_downloader.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "mock_hub.h"
#include "server/hf_cache.h"

namespace taco::server {
namespace {
namespace fs = std::filesystem;
using testing::MockHub;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path fresh_dir(const std::string& name) {
    fs::path dir = fs::temp_directory_path() / ("taco_hub_test_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// The sharded golden Llama as a hub repo, plus files the engine does not need.
MockHub::Repo golden_repo() {
    MockHub::Repo repo;
    repo.commit = kCommit;
    for (const auto& entry : fs::directory_iterator(TACO_SOURCE_DIR "/tests/data/models/llama_sharded"))
        if (entry.path().filename() != "golden.json")
            repo.files[entry.path().filename().string()] = read_bytes(entry.path());
    repo.files["README.md"] = "# tiny\n";
    repo.files["consolidated.safetensors"] = "not in the index";
    repo.files["original/params.json"] = "{}";
    repo.files["pytorch_model.bin"] = "pickle";
    return repo;
}

struct HubTest : ::testing::Test {
    void SetUp() override {
        cache = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
        repo = golden_repo();
        hub.add_repo("acme/tiny", repo);
        options.endpoint = hub.endpoint();
        options.cache_dir = cache.string();
        options.progress = ProgressStyle::kNone;
    }
    void TearDown() override { fs::remove_all(cache); }

    fs::path repo_dir() const { return fs::path(hub_repo_dir(cache.string(), "acme/tiny")); }
    void expect_file_matches(const fs::path& snapshot, const std::string& name) {
        const fs::path link = snapshot / name;
        ASSERT_TRUE(fs::is_symlink(link)) << link;
        const std::string etag = MockHub::etag_of(name, repo.files.at(name));
        EXPECT_EQ(fs::read_symlink(link), fs::path("../../blobs") / etag) << name;
        EXPECT_EQ(read_bytes(link), repo.files.at(name)) << name;
    }
    int count_requests(const std::string& method) {
        auto seen = hub.requests();
        return int(std::count_if(seen.begin(), seen.end(), [&](const auto& s) { return s.method == method; }));
    }

    MockHub hub;
    MockHub::Repo repo;
    fs::path cache;
    HubOptions options;
};

TEST_F(HubTest, DownloadWritesTheCacheLayoutWithOnlyTheFilesTheEngineReads) {
    auto dir = HubDownloader(options).resolve("acme/tiny");
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    EXPECT_EQ(fs::path(*dir), repo_dir() / "snapshots" / kCommit);
    for (const auto& name : {"config.json", "generation_config.json", "model.safetensors.index.json",
                             "model-00001-of-00005.safetensors", "model-00005-of-00005.safetensors"})
        expect_file_matches(*dir, name);
    for (const auto& name : {"README.md", "consolidated.safetensors", "pytorch_model.bin", "original"})
        EXPECT_FALSE(fs::exists(fs::path(*dir) / name)) << name;
    EXPECT_EQ(read_bytes(repo_dir() / "refs" / "main"), kCommit);
    for (const auto& blob : fs::directory_iterator(repo_dir() / "blobs"))
        EXPECT_EQ(blob.path().extension(), "") << blob.path();  // no .incomplete or .lock left among the blobs
    EXPECT_EQ(find_cached_snapshot(cache.string(), "acme/tiny"), *dir);
    for (const auto& seen : hub.requests()) EXPECT_EQ(seen.authorization, "") << seen.target;
}

TEST_F(HubTest, SecondResolveUsesTheCacheWithoutTheNetwork) {
    auto first = HubDownloader(options).resolve("acme/tiny");
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    hub.stop();
    auto second = HubDownloader(options).resolve("acme/tiny");
    ASSERT_TRUE(second.is_ok()) << second.status().message();
    EXPECT_EQ(*second, *first);
}

TEST_F(HubTest, TransferCutShortResumesWithARangeRequest) {
    const std::string shard = "model-00003-of-00005.safetensors";
    hub.cut_first_get(shard);
    auto dir = HubDownloader(options).resolve("acme/tiny");
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    expect_file_matches(*dir, shard);
    const std::string etag = MockHub::etag_of(shard, repo.files.at(shard));
    const std::string expected_range = "bytes=" + std::to_string(repo.files.at(shard).size() / 2) + "-";
    std::vector<std::string> ranges;
    for (const auto& seen : hub.requests())
        if (seen.target == "/cdn/" + etag && seen.method == "GET") ranges.push_back(seen.range);
    EXPECT_EQ(ranges, (std::vector<std::string>{"", expected_range}));
}

TEST_F(HubTest, PartialFileFromAnEarlierRunIsResumed) {
    const std::string shard = "model-00002-of-00005.safetensors";
    const std::string& bytes = repo.files.at(shard);
    const std::string etag = MockHub::etag_of(shard, bytes);
    fs::create_directories(repo_dir() / "blobs");
    std::ofstream(repo_dir() / "blobs" / (etag + ".incomplete"), std::ios::binary) << bytes.substr(0, 1000);
    auto dir = HubDownloader(options).resolve("acme/tiny");
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    expect_file_matches(*dir, shard);
    bool resumed = false;
    for (const auto& seen : hub.requests()) resumed |= seen.target == "/cdn/" + etag && seen.range == "bytes=1000-";
    EXPECT_TRUE(resumed);
    EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / (etag + ".incomplete")));
}

TEST_F(HubTest, UnknownModelIsAClearErrorAndLeavesNoSnapshot) {
    auto dir = HubDownloader(options).resolve("acme/absent");
    ASSERT_FALSE(dir.is_ok());
    const std::string& message = dir.status().message();
    EXPECT_NE(message.find("acme/absent"), std::string::npos) << message;
    EXPECT_NE(message.find("no such model"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(fs::path(hub_repo_dir(cache.string(), "acme/absent")) / "snapshots"));
}

TEST_F(HubTest, GatedModelAsksForHfTokenAndSendsIt) {
    MockHub::Repo gated = golden_repo();
    gated.token = "secret";
    hub.add_repo("acme/gated", gated);
    auto denied = HubDownloader(options).resolve("acme/gated");
    ASSERT_FALSE(denied.is_ok());
    EXPECT_NE(denied.status().message().find("HF_TOKEN"), std::string::npos) << denied.status().message();
    options.token = "secret";
    auto dir = HubDownloader(options).resolve("acme/gated");
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    int authorized_listings = 0;
    for (const auto& seen : hub.requests())
        authorized_listings +=
            seen.target.rfind("/api/models/acme/gated", 0) == 0 && seen.authorization == "Bearer secret";
    EXPECT_EQ(authorized_listings, 1);
    EXPECT_EQ(hub.requests().back().authorization, "Bearer secret");  // the last file's bytes, after the redirect
}

TEST_F(HubTest, OfflineMakesNoRequest) {
    options.offline = true;
    auto dir = HubDownloader(options).resolve("acme/tiny");
    ASSERT_FALSE(dir.is_ok());
    EXPECT_NE(dir.status().message().find("HF_HUB_OFFLINE"), std::string::npos) << dir.status().message();
    EXPECT_TRUE(hub.requests().empty());
}

TEST_F(HubTest, UnreachableHubNamesTheEndpointAndSuggestsOfflineMode) {
    hub.stop();
    auto dir = HubDownloader(options).resolve("acme/tiny");
    ASSERT_FALSE(dir.is_ok());
    const std::string& message = dir.status().message();
    EXPECT_NE(message.find(hub.endpoint()), std::string::npos) << message;
    EXPECT_NE(message.find("HF_HUB_OFFLINE"), std::string::npos) << message;
}

TEST_F(HubTest, FileThatCannotBeFetchedLeavesNoCompleteLookingSnapshot) {
    MockHub::Repo broken = golden_repo();
    broken.failing.insert("model-00004-of-00005.safetensors");
    hub.add_repo("acme/broken", broken);
    auto dir = HubDownloader(options).resolve("acme/broken");
    ASSERT_FALSE(dir.is_ok());
    EXPECT_NE(dir.status().message().find("model-00004-of-00005.safetensors"), std::string::npos)
        << dir.status().message();
    const fs::path broken_dir = hub_repo_dir(cache.string(), "acme/broken");
    EXPECT_FALSE(fs::exists(broken_dir / "snapshots"));
    EXPECT_FALSE(fs::exists(broken_dir / "refs" / "main"));
    EXPECT_FALSE(find_cached_snapshot(cache.string(), "acme/broken").has_value());
}

TEST(HubFiles, SelectsConfigTokenizerAndIndexedSafetensorsOnly) {
    const std::vector<std::string> siblings = {".gitattributes",
                                               "README.md",
                                               "config.json",
                                               "tokenizer.json",
                                               "tokenizer.model",
                                               "tokenizer_config.json",
                                               "model-1.safetensors",
                                               "model-2.safetensors",
                                               "consolidated.safetensors",
                                               "model.safetensors.index.json",
                                               "pytorch_model.bin",
                                               "original/model.safetensors"};
    auto files = HubDownloader::select_files(siblings, {"model-1.safetensors", "model-2.safetensors"});
    EXPECT_EQ(files,
              (std::vector<std::string>{"config.json", "tokenizer.json", "tokenizer_config.json",
                                        "model.safetensors.index.json", "model-1.safetensors", "model-2.safetensors"}));
}

TEST(HubFiles, FallsBackToPytorchBinsAndSentencePieceWhenThatIsAllThereIs) {
    const std::vector<std::string> siblings = {"config.json",
                                               "tokenizer.model",
                                               "pytorch_model-00001-of-00002.bin",
                                               "pytorch_model-00002-of-00002.bin",
                                               "pytorch_model.bin.index.json",
                                               "flax_model.msgpack"};
    auto files = HubDownloader::select_files(siblings);
    EXPECT_EQ(files,
              (std::vector<std::string>{"config.json", "tokenizer.model", "pytorch_model.bin.index.json",
                                        "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}));
}

}  // namespace
}  // namespace taco::server
