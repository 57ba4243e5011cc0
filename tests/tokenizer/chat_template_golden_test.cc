// The seven real chat templates render every conversation of tests/data/chat/conversations.json (and the held-out
// conversations_heldout.json) byte-identically to transformers' apply_chat_template, or fail where it raised.
#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "jinja_test_util.h"
#include "tokenizer/chat_template.h"

namespace taco {
namespace {

struct GoldenCounts {
    int identical = 0;
    int total = 0;
};

GoldenCounts check_set(const std::string& set_name) {
    testing::use_utc_time_zone();
    auto templates = testing::read_json(testing::data_path("chat/chat_templates.json"));
    auto conversations = testing::read_json(testing::data_path("chat/" + set_name + ".json"));
    auto goldens = testing::read_jsonl(testing::data_path("chat/chat_goldens.jsonl"));
    GoldenCounts counts;
    for (const auto& golden : goldens) {
        if (golden["set"] != set_name) continue;
        const std::string name = golden["template"].get<std::string>();
        const std::string conv_name = golden["conversation"].get<std::string>();
        const bool add_generation_prompt = golden["add_generation_prompt"].get<bool>();
        SCOPED_TRACE(name + " x " + conv_name + (add_generation_prompt ? " (add_generation_prompt)" : ""));
        ++counts.total;
        const auto& info = templates.at(name);
        const auto& special = info["special_tokens"];
        auto chat_template =
            ChatTemplate::from_string(info["template"].get<std::string>(), special.value("bos_token", std::string()),
                                      special.value("eos_token", std::string()));
        if (!chat_template.is_ok()) {
            ADD_FAILURE() << chat_template.status().message();
            continue;
        }
        const nlohmann::ordered_json* conversation = nullptr;
        for (const auto& c : conversations)
            if (c["name"] == conv_name) conversation = &c;
        if (!conversation) {
            ADD_FAILURE() << "conversation not found";
            continue;
        }
        ChatTemplateInputs inputs;
        inputs.messages = (*conversation)["messages"];
        if (conversation->contains("tools")) inputs.tools = (*conversation)["tools"];
        inputs.add_generation_prompt = add_generation_prompt;
        inputs.extra = conversation->value("kwargs", nlohmann::ordered_json::object());
        inputs.now_epoch_seconds = testing::kGoldenEpochSeconds;
        auto rendered = chat_template->render(inputs);
        if (golden.contains("error")) {
            EXPECT_FALSE(rendered.is_ok()) << "transformers raised " << golden["error"];
            if (!rendered.is_ok()) ++counts.identical;
            continue;
        }
        if (!rendered.is_ok()) {
            ADD_FAILURE() << "unexpected error: " << rendered.status().message();
            continue;
        }
        EXPECT_EQ(*rendered, golden["output"].get<std::string>());
        if (*rendered == golden["output"].get<std::string>()) ++counts.identical;
    }
    return counts;
}

TEST(ChatTemplateGolden, RealTemplatesMatchTransformersOnConversations) {
    GoldenCounts counts = check_set("conversations");
    EXPECT_GT(counts.total, 100);
    std::printf("chat goldens (conversations): %d / %d identical\n", counts.identical, counts.total);
}

TEST(ChatTemplateGolden, RealTemplatesMatchTransformersOnHeldOutConversations) {
    GoldenCounts counts = check_set("conversations_heldout");
    EXPECT_GT(counts.total, 40);
    std::printf("chat goldens (held out): %d / %d identical\n", counts.identical, counts.total);
}

// from_dir picks the same template transformers picked, from the npm tokenizer folders fetched by
// scripts/setup_test_data.sh (skipped when they are absent).
TEST(ChatTemplateGolden, FromDirPicksTheTemplateTransformersUsed) {
    auto templates = testing::read_json(testing::data_path("chat/chat_templates.json"));
    const std::string root = std::string(TACO_SOURCE_DIR) + "/.cache/tokenizers/";
    if (!file_exists(root + "llama3/tokenizer_config.json")) GTEST_SKIP() << "run scripts/setup_test_data.sh";
    for (const auto& [name, info] : templates.items()) {
        SCOPED_TRACE(name);
        auto chat_template = ChatTemplate::from_dir(root + name);
        ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
        EXPECT_EQ(chat_template->source(), info["template"].get<std::string>());
        for (const auto& [key, token] : info["special_tokens"].items()) {
            bool found = false;
            for (const auto& [k, v] : chat_template->special_tokens()) found = found || (k == key && v == token);
            EXPECT_TRUE(found) << key;
        }
    }
}

}  // namespace
}  // namespace taco
