// --generation-config: the model folder's generation_config.json ("auto"), none ("vllm") or another folder's
// supplies the sampling parameters a request leaves out; --override-generation-config is laid over it.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "test_client.h"

namespace taco::server::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A copy of the golden llama whose generation_config.json asks for top_k 1 (greedy) and 3 new tokens.
class GenerationConfigTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ =
            fs::temp_directory_path() / fmt::format("taco_generation_config_{}_{}", ::getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
        model_ = root_ / "llama";
        fs::copy(fs::path(TACO_SOURCE_DIR) / "tests/data/models/llama", model_, fs::copy_options::recursive);
        write(model_ / "generation_config.json",
              {{"bos_token_id", 1}, {"eos_token_id", 2}, {"top_k", 1}, {"temperature", 0.9}, {"max_new_tokens", 3}});
    }
    void TearDown() override { fs::remove_all(root_); }

    static void write(const fs::path& path, const json& value) { std::ofstream(path) << value.dump(2); }

    std::unique_ptr<TestServer> serve(const std::string& generation_config, const json& overrides = json()) {
        ApiServerOptions options;
        options.generation_config = generation_config;
        options.override_generation_config = overrides;
        // TestServer resolves the model folder under the source tree.
        return std::make_unique<TestServer>(fs::relative(model_, TACO_SOURCE_DIR).string(), options);
    }

    std::vector<int32_t> greedy(Engine& engine, int64_t max_tokens) {
        GenerationInput input;
        input.prompt_ids = kPrompt;
        input.params.temperature = 0;
        input.params.max_tokens = max_tokens;
        input.params.ignore_eos = true;
        auto out = engine.generate({input}).at(0);
        EXPECT_TRUE(out.is_ok()) << out.status().message();
        return out.is_ok() ? out->samples.at(0).token_ids : std::vector<int32_t>{};
    }

    const std::vector<int32_t> kPrompt = {1, 17, 42, 99};
    fs::path root_, model_;
};

json completion(int port, json extra = json::object()) {
    json body = {{"prompt", {1, 17, 42, 99}}, {"ignore_eos", true}, {"return_token_ids", true}};
    body.update(extra);
    HttpResult r = post(port, "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json()["choices"][0] : json();
}

TEST_F(GenerationConfigTest, AutoTakesTheModelFoldersDefaultsForWhatARequestLeavesOut) {
    auto s = serve("auto");
    const std::vector<int32_t> want = greedy(*s->engine, 8);
    // top_k 1 makes any seed greedy; max_new_tokens 3 is the default length.
    for (int seed : {1, 2, 3}) {
        json choice = completion(s->port, {{"seed", seed}});
        EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(),
                  std::vector<int32_t>(want.begin(), want.begin() + 3));
    }
    // The request's own values win.
    json longer = completion(s->port, {{"max_tokens", 8}});
    EXPECT_EQ(longer["token_ids"].get<std::vector<int32_t>>(), want);
    // An explicit top_k 0 turns the default off; the length default still holds.
    json sampled = completion(s->port, {{"top_k", 0}, {"seed", 7}});
    EXPECT_EQ(sampled["token_ids"].size(), 3u);
}

TEST_F(GenerationConfigTest, VllmIgnoresTheFile) {
    auto s = serve("vllm");
    json choice = completion(s->port);
    EXPECT_EQ(choice["token_ids"].size(), 16u);  // OpenAI's default max_tokens for completions
}

TEST_F(GenerationConfigTest, AFolderSuppliesItsOwnFile) {
    const fs::path other = root_ / "other";
    fs::create_directories(other);
    write(other / "generation_config.json", {{"max_new_tokens", 5}, {"top_k", 1}});
    auto s = serve(other.string());
    json choice = completion(s->port);
    EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(), greedy(*s->engine, 5));
}

// --override-generation-config over "auto": max_new_tokens 5 replaces the file's 3, the file's top_k 1 stays.
TEST_F(GenerationConfigTest, OverridesAreLaidOverTheFilesDefaultsAndARequestsOwnValuesWin) {
    auto s = serve("auto", {{"max_new_tokens", 5}});
    const std::vector<int32_t> want = greedy(*s->engine, 8);
    for (int seed : {1, 2}) {
        json choice = completion(s->port, {{"seed", seed}});
        EXPECT_EQ(choice["token_ids"].get<std::vector<int32_t>>(),
                  std::vector<int32_t>(want.begin(), want.begin() + 5));
    }
    EXPECT_EQ(completion(s->port, {{"max_tokens", 8}})["token_ids"].get<std::vector<int32_t>>(), want);
}

// Over "vllm" the overrides are the only defaults: the file's top_k 1 is gone unless the overrides give it.
TEST_F(GenerationConfigTest, OverridesAloneWithVllm) {
    {
        auto s = serve("vllm", {{"max_new_tokens", 4}, {"top_k", 1}});
        const std::vector<int32_t> want = greedy(*s->engine, 8);
        EXPECT_EQ(completion(s->port, {{"seed", 3}})["token_ids"].get<std::vector<int32_t>>(),
                  std::vector<int32_t>(want.begin(), want.begin() + 4));
        EXPECT_EQ(completion(s->port, {{"max_tokens", 8}})["token_ids"].get<std::vector<int32_t>>(), want);
    }
    auto s = serve("vllm", {{"temperature", 0.5}});
    EXPECT_EQ(completion(s->port)["token_ids"].size(), 16u);  // no max_new_tokens: OpenAI's default
}

TEST_F(GenerationConfigTest, BadSettingsAreClearErrors) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU backend, also where a GPU is usable
    config.model_dir = model_.string();
    config.num_device_blocks = 64;
    auto engine = Engine::create(config);  // before the file is broken: the engine reads it too
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    auto check = [&](const std::string& mode, const std::string& needle) {
        ApiServerOptions options;
        options.model_dir = model_.string();
        options.served_model_names = {"m"};
        options.http.host = "127.0.0.1";
        options.http.port = 0;
        options.generation_config = mode;
        auto server = ApiServer::create(engine->get(), options);
        ASSERT_FALSE(server.is_ok()) << mode;
        EXPECT_NE(server.status().message().find(needle), std::string::npos) << server.status().message();
    };
    check((root_ / "missing").string(), "expected 'auto', 'vllm' or a folder");
    const fs::path empty = root_ / "empty";
    fs::create_directories(empty);
    check(empty.string(), "no generation_config.json");
    write(model_ / "generation_config.json", {{"temperature", "hot"}});
    check("auto", "'temperature' must be a number");
    write(model_ / "generation_config.json", {{"top_p", 1.5}});
    check("auto", "top_p");
    write(model_ / "generation_config.json", {{"top_k", 1}});
    auto check_overrides = [&](const json& overrides, const std::string& needle) {
        ApiServerOptions options;
        options.model_dir = model_.string();
        options.served_model_names = {"m"};
        options.http.host = "127.0.0.1";
        options.http.port = 0;
        options.override_generation_config = overrides;
        auto server = ApiServer::create(engine->get(), options);
        ASSERT_FALSE(server.is_ok()) << overrides.dump();
        EXPECT_NE(server.status().message().find(needle), std::string::npos) << server.status().message();
    };
    check_overrides({{"seed", 1}}, "--override-generation-config: 'seed' is not a key");
    check_overrides({{"top_p", 0}}, "--override-generation-config: top_p");
    check_overrides(json::array(), "--override-generation-config must be a JSON object");
}

}  // namespace
}  // namespace taco::server::testing
