// vLLM's --tokenizer (a tokenizer folder other than the model's: its tokenizer files and chat template),
// --max-logprobs (more logprobs than it is a 400 naming the field) and --kv-cache-dtype (a dtype other than the KV
// cache's is refused at start).
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "test_client.h"
#include "tokenizer/tokenizer.h"

namespace taco::server::testing {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kModel = "tests/data/models/llama";  // no tokenizer of its own; vocabulary 512

// A tokenizer folder: the 400-token unigram tokenizer and a chat template of its own.
fs::path tokenizer_folder() {
    const fs::path dir = fs::temp_directory_path() / ("taco_tokenizer_flag_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(std::string(TACO_SOURCE_DIR) + "/tests/data/tokenizer/unigram/tokenizer.json", dir / "tokenizer.json",
                  fs::copy_options::overwrite_existing);
    std::ofstream(dir / "tokenizer_config.json")
        << json({{"bos_token", "<s>"},
                 {"eos_token", "</s>"},
                 {"chat_template", "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"}})
               .dump();
    return dir;
}

TEST(TokenizerFlag, AnotherFoldersTokenizerAndChatTemplateAreUsed) {
    const fs::path dir = tokenizer_folder();
    ApiServerOptions options;
    options.tokenizer_dir = dir.string();
    TestServer s(kModel, options, [&](EngineConfig& config) { config.tokenizer_dir = dir.string(); });
    auto tokenizer = Tokenizer::load(dir.string());
    ASSERT_TRUE(tokenizer) << tokenizer.status().message();
    const HttpResult text = post(s.port, "/tokenize", {{"prompt", "hello world"}});
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(text.json()["tokens"], json(*(*tokenizer)->encode("hello world", true)));
    // The chat template is the tokenizer folder's.
    const HttpResult chat = post(s.port, "/tokenize", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
    ASSERT_EQ(chat.status, 200) << chat.body;
    EXPECT_EQ(chat.json()["tokens"], json(*(*tokenizer)->encode("<user>hi", false)));
    const HttpResult reply = post(s.port, "/v1/chat/completions",
                                  {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}});
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(reply.json()["usage"]["completion_tokens"], 3);

    TestServer plain(kModel);  // the model folder alone has no tokenizer
    EXPECT_EQ(post(plain.port, "/tokenize", {{"prompt", "hello world"}}).status, 400);
    fs::remove_all(dir);
}

TEST(TokenizerFlag, AFolderWithoutATokenizerIsAnErrorNamingTheFlag) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;
    config.model_dir = std::string(TACO_SOURCE_DIR) + "/" + kModel;
    config.tokenizer_dir = config.model_dir;
    config.num_device_blocks = 16;
    auto engine = Engine::create(config);
    ASSERT_FALSE(engine);
    EXPECT_NE(engine.status().message().find("--tokenizer " + config.model_dir + ": the folder has no tokenizer"),
              std::string::npos)
        << engine.status().message();
}

TEST(MaxLogprobs, RequestsAboveTheCapAreA400NamingTheField) {
    TestServer s(kModel, {}, [](EngineConfig& config) { config.max_logprobs = 2; });
    const json completion = {{"prompt", {1, 2, 3}}, {"max_tokens", 2}};
    json at_cap = completion, above = completion, prompt_above = completion;
    at_cap["logprobs"] = 2;
    above["logprobs"] = 3;
    prompt_above["prompt_logprobs"] = 3;
    EXPECT_EQ(post(s.port, "/v1/completions", at_cap).status, 200);
    for (const auto& [body, field] :
         {std::pair<json, std::string>{above, "logprobs"}, {prompt_above, "prompt_logprobs"}}) {
        const HttpResult res = post(s.port, "/v1/completions", body);
        ASSERT_EQ(res.status, 400) << res.body;
        EXPECT_EQ(res.json()["error"]["param"], field) << res.body;
        EXPECT_NE(res.body.find("--max-logprobs 2"), std::string::npos) << res.body;
    }
}

TEST(MaxLogprobs, ChatTopLogprobsAboveTheCapNamesTopLogprobs) {
    TestServer s("models/demo", {}, [](EngineConfig& config) { config.max_logprobs = 2; });
    const json messages = {{{"role", "user"}, {"content", "hi"}}};
    EXPECT_EQ(post(s.port, "/v1/chat/completions",
                   {{"messages", messages}, {"max_tokens", 1}, {"logprobs", true}, {"top_logprobs", 2}})
                  .status,
              200);
    const HttpResult res = post(s.port, "/v1/chat/completions",
                                {{"messages", messages}, {"max_tokens", 1}, {"logprobs", true}, {"top_logprobs", 3}});
    ASSERT_EQ(res.status, 400) << res.body;
    EXPECT_EQ(res.json()["error"]["param"], "top_logprobs") << res.body;
    EXPECT_NE(res.json()["error"]["message"].get<std::string>().find("top_logprobs: 3"), std::string::npos) << res.body;
}

TEST(KvCacheDtype, ADtypeOtherThanTheCachesIsRefusedAndItsOwnIsAccepted) {
    EngineConfig config;
    config.device = DeviceChoice::kCpu;  // the CPU's KV cache is f32
    config.model_dir = std::string(TACO_SOURCE_DIR) + "/" + kModel;
    config.num_device_blocks = 16;
    config.kv_cache_dtype = DType::kBF16;
    auto refused = Engine::create(config);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.status().message().find("--kv-cache-dtype BF16"), std::string::npos)
        << refused.status().message();
    config.kv_cache_dtype = DType::kF32;
    EXPECT_TRUE(Engine::create(config)) << "the cache's own dtype is accepted";
}

}  // namespace
}  // namespace taco::server::testing
