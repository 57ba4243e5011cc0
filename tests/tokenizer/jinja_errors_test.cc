// Bad templates and hostile inputs end in a Status with a line number, never a crash, a hang or unbounded memory.
#include <string>

#include <gtest/gtest.h>

#include "jinja_test_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/template.h"

namespace taco::jinja {
namespace {

Result<std::string> render(const std::string& source, RenderOptions options = {}) {
    TACO_ASSIGN_OR_RETURN(Template tmpl, Template::parse(source));
    return tmpl.render(
        {{"messages", Value::from_json(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])"))}},
        options);
}

TEST(JinjaErrors, SyntaxErrorNamesTheLine) {
    auto result = Template::parse("line one\n{% if true %}\n{{ 1 + }}\n{% endif %}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("line 3"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, UnclosedBlockIsALoadError) {
    auto result = Template::parse("{% for m in messages %}{{ m }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("endfor"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, RuntimeErrorNamesTheLineAndMessage) {
    auto result = render("a\nb\n{{ raise_exception('roles must alternate') }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("line 3"), std::string::npos) << result.status().message();
    EXPECT_NE(result.status().message().find("roles must alternate"), std::string::npos);
}

TEST(JinjaErrors, TypeErrorIsAStatus) {
    auto result = render("{{ 'a' + 1 }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("concatenate"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, SandboxRefusesListAppend) {
    auto result = render("{% set l = [] %}{{ l.append(1) }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("unsafe"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, DeepBlockNestingIsRefused) {
    std::string source;
    for (int i = 0; i < 5000; ++i) source += "{% if true %}";
    for (int i = 0; i < 5000; ++i) source += "{% endif %}";
    EXPECT_FALSE(Template::parse(source).is_ok());
}

TEST(JinjaErrors, DeepExpressionNestingIsRefused) {
    for (const char* open : {"(", "[", "not ", "-", "{'a': "}) {
        std::string source = "{{ ";
        for (int i = 0; i < 20000; ++i) source += open;
        source += "1 }}";
        EXPECT_FALSE(Template::parse(source).is_ok()) << open;
    }
}

TEST(JinjaErrors, LongOperatorAndFilterChainsAreRefused) {
    std::string sum = "{{ 1", filters = "{{ 'x'", attrs = "{{ a";
    for (int i = 0; i < 100000; ++i) {
        sum += " + 1";
        filters += "|upper";
        attrs += ".b";
    }
    for (const std::string& source : {sum + " }}", filters + " }}", attrs + " }}"}) {
        auto result = Template::parse(source);
        ASSERT_FALSE(result.is_ok());
        EXPECT_NE(result.status().message().find("too"), std::string::npos) << result.status().message();
    }
    std::string ok = "{{ 1";
    for (int i = 0; i < 200; ++i) ok += " + 1";
    auto result = render(ok + " }}");
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(*result, "201");
}

TEST(JinjaErrors, ValuesGrowingThroughANamespaceAreBounded) {
    auto result = render(
        "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}"
        "{{ ns.x }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("nested"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, NamespaceCyclesAreRefused) {
    auto result = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
    EXPECT_FALSE(result.is_ok());
    result = render("{% set a = namespace() %}{% set b = namespace() %}{% set a.b = [b] %}{% set b.a = a %}{{ a }}");
    EXPECT_FALSE(result.is_ok());
}

TEST(JinjaErrors, InfiniteMacroRecursionStops) {
    auto result = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("recursion"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, LoopBombHitsTheStepBudget) {
    RenderOptions options;
    options.limits.max_steps = 200000;
    auto result = render("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", options);
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("budget"), std::string::npos) << result.status().message();
}

TEST(JinjaErrors, OutputBombHitsTheSizeLimit) {
    RenderOptions options;
    options.limits.max_output_bytes = 1 << 20;
    EXPECT_FALSE(render("{{ 'x' * 100000000 }}", options).is_ok());
    EXPECT_FALSE(render("{% for i in range(100000) %}{{ 'abcdefghijklmnopqrstuvwxyz' }}{% endfor %}", options).is_ok());
}

TEST(JinjaErrors, HugeResultsAreStatusesNotCrashes) {
    EXPECT_FALSE(render("{% set s = 'x' * 1000000 %}{{ [s] * 100000 }}").is_ok());
    EXPECT_FALSE(render("{% set s = 'x' * 1000000 %}{{ ([s] * 100000)|join }}").is_ok());
    EXPECT_FALSE(render("{% set s = 'a' * 100000 %}{{ s.replace('a', s) }}").is_ok());
    EXPECT_FALSE(render("{% set s = 'a\n' * 100000 %}{{ s|indent(4000) }}").is_ok());
    EXPECT_FALSE(render("{{ [1]|batch(1000000000000, 0)|list }}").is_ok());
    auto empty = render("[{{ '' * 1000000000000000 }}{{ ([] * 1000000000000000)|length }}]");
    ASSERT_TRUE(empty.is_ok()) << empty.status().message();
    EXPECT_EQ(*empty, "[0]");
}

TEST(JinjaErrors, SandboxRangeLimit) { EXPECT_FALSE(render("{{ range(100001)|length }}").is_ok()); }

// Every prefix of every real chat template and of every conformance case either parses and renders or fails
// with a Status.
TEST(JinjaErrors, TruncatedTemplatesNeverCrash) {
    auto templates = testing::read_json(testing::data_path("chat/chat_templates.json"));
    std::vector<std::string> sources;
    for (const auto& [name, info] : templates.items()) sources.push_back(info["template"].get<std::string>());
    for (const auto& c : testing::read_jsonl(testing::data_path("jinja/conformance.jsonl")))
        sources.push_back(c["template"].get<std::string>());
    ASSERT_GT(sources.size(), 100u);
    RenderOptions options;
    options.limits.max_steps = 100000;
    int parsed = 0, failed = 0;
    for (const std::string& source : sources) {
        size_t stride = source.size() > 400 ? 3 : 1;
        for (size_t n = 0; n <= source.size(); n += stride) {
            auto result = render(source.substr(0, n), options);
            if (result.is_ok()) {
                ++parsed;
            } else {
                ++failed;
                EXPECT_FALSE(result.status().message().empty());
            }
        }
    }
    EXPECT_GT(parsed, 0);
    EXPECT_GT(failed, 0);
}

// Byte-level mutations of a real template (bytes replaced by template punctuation) never crash.
TEST(JinjaErrors, MutatedTemplatesNeverCrash) {
    auto templates = testing::read_json(testing::data_path("chat/chat_templates.json"));
    const std::string source = templates["qwen3"]["template"].get<std::string>();
    const std::string alphabet = "{}%#-+()[]'\"|.:,~ \n\\x0";
    RenderOptions options;
    options.limits.max_steps = 100000;
    uint64_t state = 12345;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string mutated = source;
        for (int k = 0; k < 3; ++k) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t pos = (state >> 33) % mutated.size();
            mutated[pos] = alphabet[(state >> 13) % alphabet.size()];
        }
        auto result = render(mutated, options);
        if (!result.is_ok()) {
            EXPECT_FALSE(result.status().message().empty());
        }
    }
}

TEST(JinjaErrors, InvalidUtf8IsHandled) {
    auto result = render("{{ '\xff\xfe' ~ messages[0].content|upper }}{{ '\xc3'|length }}{{ '\xe2\x82'[::-1] }}");
    EXPECT_TRUE(result.is_ok()) << result.status().message();
}

TEST(ChatTemplateErrors, DeeplyNestedInputJsonIsRefused) {
    auto chat_template = ChatTemplate::from_string("{{ messages }}");
    ASSERT_TRUE(chat_template.is_ok());
    std::string deep = "[{\"role\": \"user\", \"content\": ";
    for (int i = 0; i < 5000; ++i) deep += "[";
    for (int i = 0; i < 5000; ++i) deep += "]";
    deep += "}]";
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(deep);
    auto out = chat_template->render(inputs);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("deeper"), std::string::npos) << out.status().message();
}

TEST(ChatTemplateErrors, BadInputsAreStatuses) {
    auto chat_template = ChatTemplate::from_string("{{ messages[0]['content'] }}");
    ASSERT_TRUE(chat_template.is_ok());
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::object();
    EXPECT_FALSE(chat_template->render(inputs).is_ok());
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
    inputs.tools = "not a list";
    EXPECT_FALSE(chat_template->render(inputs).is_ok());
    EXPECT_FALSE(ChatTemplate::from_string("{% if %}").is_ok());
}

}  // namespace
}  // namespace taco::jinja
