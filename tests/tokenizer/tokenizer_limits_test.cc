// Hostile tokenizer.json / tokenizer_config.json and chat templates (core/limits.h): clear errors naming the
// limit, no stack overflow, no allocation sized by an absurd value.
#include <string>

#include <gtest/gtest.h>

#include "tokenizer/jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace taco {
namespace {

std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }

std::string with_model(const std::string& model, const std::string& added = "[]") {
    return R"({"version": "1.0", "added_tokens": )" + added +
           R"(, "normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, "post_processor": null,
        "decoder": {"type": "ByteLevel"}, "model": )" +
           model + "}";
}

void expect_error(const Result<std::unique_ptr<Tokenizer>>& tok, const std::string& needle) {
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find(needle), std::string::npos) << tok.status().message();
}

TEST(TokenizerLimits, DeepNestingAnywhereInTheFilesIsNamed) {
    const std::string model = R"({"type": "BPE", "vocab": {"a": 0}, "merges": []})";
    std::string text = with_model(model);
    text.insert(text.size() - 1, ", \"extra\": " + nested(50000));
    expect_error(Tokenizer::from_json_text(text, "", "t.json"), "nested deeper than 128");
    expect_error(Tokenizer::from_json_text(with_model(model), "{\"x\": " + nested(50000) + "}", "t.json"),
                 "tokenizer_config.json: JSON nested deeper than 128");
    // Inside model.merges, which the fast scanner skips.
    expect_error(Tokenizer::from_json_text(
                     with_model(R"({"type": "BPE", "vocab": {"a": 0}, "merges": )" + nested(50000) + "}"), "", "t"),
                 "");
}

TEST(TokenizerLimits, VocabularyIdsPastTheLimitAreRefused) {
    expect_error(Tokenizer::from_json_text(
                     with_model(R"({"type": "BPE", "vocab": {"a": 0, "b": 2147483647}, "merges": []})"), "", "t"),
                 "limits::kMaxTokenId");
    expect_error(
        Tokenizer::from_json_text(
            with_model(R"({"type": "WordPiece", "unk_token": "a", "vocab": {"a": 0, "b": 2147483647}})"), "", "t"),
        "limits::kMaxTokenId");
    expect_error(Tokenizer::from_json_text(with_model(R"({"type": "BPE", "vocab": {"a": 0}, "merges": []})",
                                                      R"([{"id": 2147483647, "content": "<x>", "special": true}])"),
                                           "", "t"),
                 "limits::kMaxTokenId");
    expect_error(Tokenizer::from_json_text(with_model(R"({"type": "BPE", "vocab": {"a": 0}, "merges": []})",
                                                      R"([{"id": 1099511627776, "content": "<x>"}])"),
                                           "", "t"),
                 "limits::kMaxTokenId");
}

Result<std::string> render(const std::string& source) {
    TACO_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::parse(source));
    return tmpl.render({});
}

void expect_render_error(const std::string& source, const std::string& needle) {
    auto result = render(source);
    ASSERT_FALSE(result.is_ok()) << source;
    EXPECT_NE(result.status().message().find(needle), std::string::npos) << result.status().message();
}

TEST(TemplateLimits, AListDoubledFortyTimesIsRefused) {
    expect_render_error(
        "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}"
        "{% endfor %}{{ ns.x | length }}",
        "limits::kMaxTemplateListItems");
}

TEST(TemplateLimits, ManyLargeListsExhaustTheBuildBudget) {
    // Each list is under the per-list cap, but together they pass the render's budget of built items.
    expect_render_error(
        "{% set big = [0] * 1000000 %}{% set ns = namespace(n=0) %}{% for i in range(100) %}"
        "{% set ns.n = ns.n + (big + []) | length %}{% endfor %}{{ ns.n }}",
        "limits::kMaxTemplateBuiltItems");
}

TEST(TemplateLimits, ManyLargeStringsExhaustTheBuildBudget) {
    expect_render_error(
        "{% set s = 'x' * 60000000 %}{% set ns = namespace(n=0) %}{% for i in range(100) %}"
        "{% set ns.n = ns.n + (s ~ i) | length %}{% endfor %}{{ ns.n }}",
        "limits::kMaxTemplateBuiltBytes");
}

TEST(TemplateLimits, OrdinaryTemplatesRenderUnderTheBudget) {
    auto result = render(
        "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = ns.x + [i] %}"
        "{% endfor %}{{ ns.x | length }}");
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(*result, "1000");
}

}  // namespace
}  // namespace taco
