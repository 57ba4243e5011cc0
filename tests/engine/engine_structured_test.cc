// Structured output through the engine on the demo model: sampled outputs follow their grammar and end with
// "stop" when it is complete.
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace taco {
namespace {

using structured::StructuredKind;
using structured::StructuredOutputSpec;

std::unique_ptr<Engine> demo_engine() { return testing_util::create_engine(testing_util::demo_config()); }

StructuredOutputSpec spec_of(StructuredKind kind, std::string text, std::vector<std::string> choices = {}) {
    StructuredOutputSpec spec;
    spec.kind = kind;
    spec.text = std::move(text);
    spec.choices = std::move(choices);
    return spec;
}

std::vector<SampleOutput> run(Engine& engine, const StructuredOutputSpec& spec, int64_t n, double temperature,
                              int64_t max_tokens = 200) {
    auto grammar = engine.compile_structured(spec);
    EXPECT_TRUE(grammar.is_ok()) << grammar.status().message();
    GenerationInput input;
    input.prompt = "The weather today is";
    input.params.n = n;
    input.params.temperature = temperature;
    input.params.seed = 5;
    input.params.max_tokens = max_tokens;
    input.params.grammar = *grammar;
    auto outputs = engine.generate({input});
    EXPECT_TRUE(outputs[0].is_ok()) << outputs[0].status().message();
    return outputs[0].is_ok() ? outputs[0]->samples : std::vector<SampleOutput>{};
}

TEST(EngineStructured, SampledJsonFollowsTheSchemaAndStopsWhenComplete) {
    auto engine = demo_engine();
    ASSERT_NE(engine, nullptr);
    const std::string schema = R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
        "temp": {"type": "integer", "minimum": -30, "maximum": 45}, "sunny": {"type": "boolean"}},
        "required": ["city", "temp", "sunny"], "additionalProperties": false})";
    const auto samples = run(*engine, spec_of(StructuredKind::kJsonSchema, schema), 4, 1.0);
    ASSERT_EQ(samples.size(), 4u);
    for (const SampleOutput& s : samples) {
        ASSERT_EQ(s.finish_reason, FinishReason::kStop) << s.text;
        nlohmann::json value;
        ASSERT_NO_THROW(value = nlohmann::json::parse(s.text)) << s.text;
        ASSERT_TRUE(value.is_object()) << s.text;
        EXPECT_EQ(value.size(), 3u) << s.text;
        EXPECT_TRUE(value.at("city").is_string());
        EXPECT_LE(value.at("city").get<std::string>().size(), 10u * 4);
        EXPECT_TRUE(value.at("temp").is_number_integer());
        EXPECT_GE(value.at("temp").get<int64_t>(), -30);
        EXPECT_LE(value.at("temp").get<int64_t>(), 45);
        EXPECT_TRUE(value.at("sunny").is_boolean());
    }
}

TEST(EngineStructured, RegexChoiceAndGrammarOutputsMatch) {
    auto engine = demo_engine();
    ASSERT_NE(engine, nullptr);
    for (const SampleOutput& s :
         run(*engine, spec_of(StructuredKind::kRegex, "[A-Z][a-z]{2,6} (19|20)[0-9]{2}"), 3, 1.0)) {
        EXPECT_EQ(s.finish_reason, FinishReason::kStop);
        EXPECT_TRUE(std::regex_match(s.text, std::regex("[A-Z][a-z]{2,6} (19|20)[0-9]{2}"))) << s.text;
    }
    for (const SampleOutput& s :
         run(*engine, spec_of(StructuredKind::kChoice, "", {"sunny", "rainy", "cloudy"}), 3, 1.0)) {
        EXPECT_EQ(s.finish_reason, FinishReason::kStop);
        EXPECT_TRUE(s.text == "sunny" || s.text == "rainy" || s.text == "cloudy") << s.text;
    }
    const auto greedy =
        run(*engine, spec_of(StructuredKind::kGrammar, "root ::= (\"hot\" | \"cold\") \" and \" [a-z]{3,5}"), 1, 0.0);
    ASSERT_EQ(greedy.size(), 1u);
    EXPECT_TRUE(std::regex_match(greedy[0].text, std::regex("(hot|cold) and [a-z]{3,5}"))) << greedy[0].text;
}

// The demo model writes long strings: an object may run out of tokens. Every output is then at least a prefix of
// some JSON object, and a finished one is an object.
TEST(EngineStructured, JsonObjectModeGivesAnObjectOrAPrefixOfOne) {
    auto engine = demo_engine();
    ASSERT_NE(engine, nullptr);
    const StructuredOutputSpec spec = spec_of(StructuredKind::kJsonObject, "");
    auto grammar = engine->compile_structured(spec);
    ASSERT_TRUE(grammar.is_ok());
    for (const SampleOutput& s : run(*engine, spec, 3, 0.7, 120)) {
        structured::GrammarMatcher matcher(*grammar, {});
        EXPECT_TRUE(matcher.accept_bytes(s.text)) << s.text;
        if (s.finish_reason != FinishReason::kStop) continue;
        nlohmann::json value;
        ASSERT_NO_THROW(value = nlohmann::json::parse(s.text)) << s.text;
        EXPECT_TRUE(value.is_object());
    }
}

TEST(EngineStructured, AGrammarForAnotherVocabularyIsRefused) {
    auto engine = demo_engine();
    ASSERT_NE(engine, nullptr);
    std::vector<std::optional<std::string>> bytes = {"a", "b"};
    auto vocab = std::make_shared<const structured::TokenVocab>(bytes, 2);
    structured::GrammarCache cache;
    auto grammar = cache.get(spec_of(StructuredKind::kRegex, "a+"), vocab);
    ASSERT_TRUE(grammar.is_ok());
    GenerationInput input;
    input.prompt = "x";
    input.params.grammar = *grammar;
    auto submitted = engine->submit(input);
    ASSERT_FALSE(submitted.is_ok());
    EXPECT_NE(submitted.status().message().find("vocabulary"), std::string::npos);
}

}  // namespace
}  // namespace taco

namespace taco {
namespace {

// grammar_after (a reasoning model's "</think>"): the output is free until it spells the text, then follows the
// grammar. Here the text is "e", which the demo model writes within a few tokens.
TEST(EngineStructured, GrammarAppliesOnlyAfterTheGivenText) {
    auto engine = demo_engine();
    ASSERT_NE(engine, nullptr);
    auto grammar = engine->compile_structured(spec_of(StructuredKind::kRegex, "=[0-9]{3}"));
    ASSERT_TRUE(grammar.is_ok()) << grammar.status().message();
    GenerationInput input;
    input.prompt = "The weather today is";
    input.params.n = 3;
    input.params.temperature = 1.0;
    input.params.seed = 11;
    input.params.max_tokens = 100;
    input.params.grammar = *grammar;
    input.params.grammar_after = "e";
    auto outputs = engine->generate({input});
    ASSERT_TRUE(outputs[0].is_ok()) << outputs[0].status().message();
    for (const SampleOutput& s : outputs[0]->samples) {
        ASSERT_EQ(s.finish_reason, FinishReason::kStop) << s.text;
        const size_t eq = s.text.rfind('=');
        ASSERT_NE(eq, std::string::npos) << s.text;
        EXPECT_TRUE(std::regex_match(s.text.substr(eq), std::regex("=[0-9]{3}"))) << s.text;
        // Free text before, holding the first "e"; the grammar started at the token after it.
        EXPECT_NE(s.text.substr(0, eq).find('e'), std::string::npos) << s.text;
        EXPECT_GT(eq, 0u) << s.text;
    }
}

}  // namespace
}  // namespace taco
