// ChatTemplate::from_dir reads tokenizer_config.json / chat_template.jinja the way transformers 5.x does.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/chat_template.h"

namespace taco {
namespace {

class ChatTemplateConfig : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("taco_chat_config_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
    Result<std::string> render_dir(bool add_generation_prompt = false) {
        TACO_ASSIGN_OR_RETURN(ChatTemplate chat_template, ChatTemplate::from_dir(dir_.string()));
        ChatTemplateInputs inputs;
        inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
        inputs.add_generation_prompt = add_generation_prompt;
        return chat_template.render(inputs);
    }
    std::filesystem::path dir_;
};

TEST_F(ChatTemplateConfig, StringTemplateWithStringSpecialTokens) {
    write(
        "tokenizer_config.json",
        R"({"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"})");
    auto out = render_dir();
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "<s>hi</s>");
}

TEST_F(ChatTemplateConfig, AddedTokenObjectsGiveTheirContent) {
    write("tokenizer_config.json",
          R"({"bos_token": {"__type": "AddedToken", "content": "<|b|>", "lstrip": false}, "eos_token": null,
              "chat_template": "{{ bos_token }}|{{ eos_token is defined }}"})");
    auto out = render_dir();
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "<|b|>|False");
}

TEST_F(ChatTemplateConfig, ListOfNamedTemplatesUsesDefault) {
    write(
        "tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "DEFAULT {{ add_generation_prompt }}"}]})");
    auto out = render_dir(true);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "DEFAULT True");
}

TEST_F(ChatTemplateConfig, ToolUseTemplateIsPickedWhenToolsAreGiven) {
    write(
        "tokenizer_config.json",
        R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T{{ tools|length }}"}]})");
    auto chat_template = ChatTemplate::from_dir(dir_.string());
    ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
    auto plain = chat_template->render(inputs);
    ASSERT_TRUE(plain.is_ok()) << plain.status().message();
    EXPECT_EQ(*plain, "D");
    inputs.tools = nlohmann::ordered_json::parse(R"([{"type": "function"}])");
    auto with_tools = chat_template->render(inputs);
    ASSERT_TRUE(with_tools.is_ok()) << with_tools.status().message();
    EXPECT_EQ(*with_tools, "T1");
}

TEST_F(ChatTemplateConfig, EmptyConversationIsAnError) {
    write("tokenizer_config.json", R"({"chat_template": "x"})");
    auto chat_template = ChatTemplate::from_dir(dir_.string());
    ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::array();
    auto out = chat_template->render(inputs);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("empty conversation"), std::string::npos) << out.status().message();
}

TEST_F(ChatTemplateConfig, ListWithoutDefaultIsAnError) {
    write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "T"}]})");
    auto out = render_dir();
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("default"), std::string::npos) << out.status().message();
}

TEST_F(ChatTemplateConfig, MissingTemplateNamesTheFile) {
    write("tokenizer_config.json", R"({"bos_token": "<s>"})");
    auto out = render_dir();
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("tokenizer_config.json"), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("chat_template"), std::string::npos) << out.status().message();
}

TEST_F(ChatTemplateConfig, MissingDirectoryIsAnError) {
    std::filesystem::remove_all(dir_);
    EXPECT_FALSE(render_dir().is_ok());
}

TEST_F(ChatTemplateConfig, JinjaFileTakesPrecedenceOverConfig) {
    write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": "FROM CONFIG"})");
    write("chat_template.jinja", "FROM FILE {{ eos_token }}\n");
    auto out = render_dir();
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "FROM FILE </s>");  // the file's trailing newline is dropped as jinja2 does
}

TEST_F(ChatTemplateConfig, JinjaFileWithoutConfig) {
    write("chat_template.jinja", "{% for m in messages %}[{{ m.role }}]{% endfor %}");
    auto out = render_dir();
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "[user]");
}

TEST_F(ChatTemplateConfig, InvalidJsonNamesTheFile) {
    write("tokenizer_config.json", R"({"chat_template": )");
    auto out = render_dir();
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("tokenizer_config.json"), std::string::npos) << out.status().message();
}

TEST_F(ChatTemplateConfig, WrongTypeOfTemplateIsAnError) {
    write("tokenizer_config.json", R"({"chat_template": 42})");
    EXPECT_FALSE(render_dir().is_ok());
}

TEST_F(ChatTemplateConfig, SyntaxErrorNamesTheFileAndLine) {
    write("chat_template.jinja", "ok\n{% if %}");
    auto out = render_dir();
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("chat_template.jinja"), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("line 2"), std::string::npos) << out.status().message();
}

TEST_F(ChatTemplateConfig, KwargsOverrideSpecialTokensAndDateString) {
    write(
        "tokenizer_config.json",
        R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}|{{ date_string }}|{{ enable_thinking }}|{{ tools }}"})");
    auto chat_template = ChatTemplate::from_dir(dir_.string());
    ASSERT_TRUE(chat_template.is_ok()) << chat_template.status().message();
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
    inputs.date_string = "01 Jan 2030";
    inputs.extra = nlohmann::ordered_json::parse(R"({"bos_token": "<B>", "enable_thinking": false})");
    auto out = chat_template->render(inputs);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(*out, "<B>|01 Jan 2030|False|None");
}

}  // namespace
}  // namespace taco
