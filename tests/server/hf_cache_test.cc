#include "server/hf_cache.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace taco::server {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
    fs::path dir = fs::temp_directory_path() / ("taco_hf_cache_test_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

TEST(HfCache, FolderIsUsedAsIs) {
    auto dir = resolve_model_dir(TACO_SOURCE_DIR "/models/demo", "/nonexistent");
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    EXPECT_EQ(*dir, TACO_SOURCE_DIR "/models/demo");
}

TEST(HfCache, HubIdResolvesToTheSnapshotRefsMainNames) {
    fs::path cache = fresh_dir("refs");
    fs::path repo = cache / "models--acme--tiny";
    fs::create_directories(repo / "snapshots" / "aaa");
    fs::create_directories(repo / "snapshots" / "bbb");
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << "bbb";
    std::ofstream(repo / "snapshots" / "aaa" / "config.json") << "{}";
    std::ofstream(repo / "snapshots" / "bbb" / "config.json") << "{}";
    auto dir = resolve_model_dir("acme/tiny", cache.string());
    ASSERT_TRUE(dir.is_ok()) << dir.status().message();
    EXPECT_EQ(*dir, (repo / "snapshots" / "bbb").string());
    fs::remove_all(cache);
}

TEST(HfCache, SnapshotWithoutConfigIsNotACachedModel) {
    fs::path cache = fresh_dir("partial");
    fs::path repo = cache / "models--acme--partial";
    fs::create_directories(repo / "snapshots" / "ccc");
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << "ccc";
    std::ofstream(repo / "snapshots" / "ccc" / "tokenizer.json") << "{}";  // e.g. one file fetched by hf_hub_download
    EXPECT_FALSE(find_cached_snapshot(cache.string(), "acme/partial").has_value());
    EXPECT_FALSE(resolve_model_dir("acme/partial", cache.string()).is_ok());
    fs::remove_all(cache);
}

TEST(HfCache, HubIdsAreOrgSlashNameWithoutPathTricks) {
    EXPECT_TRUE(is_hub_id("meta-llama/Llama-3.1-8B"));
    EXPECT_FALSE(is_hub_id("gpt2"));
    EXPECT_FALSE(is_hub_id("a/b/c"));
    EXPECT_FALSE(is_hub_id("../x"));
    EXPECT_FALSE(is_hub_id("org/.."));
    EXPECT_FALSE(is_hub_id("/abs"));
}

TEST(HfCache, MissingHubIdSaysWhereItLooked) {
    fs::path cache = fresh_dir("missing");
    auto dir = resolve_model_dir("acme/absent", cache.string());
    ASSERT_FALSE(dir.is_ok());
    EXPECT_NE(dir.status().message().find("models--acme--absent"), std::string::npos) << dir.status().message();
    EXPECT_FALSE(resolve_model_dir("no_such_folder", cache.string()).is_ok());
    fs::remove_all(cache);
}

}  // namespace
}  // namespace taco::server
