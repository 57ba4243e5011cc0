#include "structured/structured_output.h"

#include <random>

#include <gtest/gtest.h>

#include "json_schema_validator.h"
#include "structured_test_util.h"
#include "tokenizer/tokenizer.h"

namespace taco::structured {
namespace {

StructuredOutputSpec spec_of(StructuredKind kind, std::string text, std::vector<std::string> choices = {}) {
    StructuredOutputSpec spec;
    spec.kind = kind;
    spec.text = std::move(text);
    spec.choices = std::move(choices);
    return spec;
}

TEST(StructuredOutput, ChoicesMatchExactlyOneOfThem) {
    const StructuredOutputSpec spec = spec_of(StructuredKind::kChoice, "", {"yes", "no", "maybe so"});
    auto g = build_grammar(spec);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    EXPECT_TRUE(testing::matches(*g, "maybe so"));
    EXPECT_TRUE(testing::matches(*g, "no"));
    EXPECT_FALSE(testing::matches(*g, "maybe"));
    EXPECT_FALSE(testing::matches(*g, "yesno"));
    EXPECT_FALSE(build_grammar(spec_of(StructuredKind::kChoice, "")).is_ok());
}

TEST(StructuredOutput, CacheCompilesEachSpecOncePerVocabulary) {
    GrammarCache cache(2);
    auto v1 = testing::vocab_of({"a", "b"});
    auto v2 = testing::vocab_of({"a", "c"});
    const StructuredOutputSpec a = spec_of(StructuredKind::kRegex, "a+");
    const StructuredOutputSpec b = spec_of(StructuredKind::kRegex, "b+");
    auto first = cache.get(a, v1);
    ASSERT_TRUE(first.is_ok());
    auto again = cache.get(a, v1);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(first->get(), again->get());
    EXPECT_EQ(cache.num_compiled(), 1);
    ASSERT_TRUE(cache.get(a, v2).is_ok());  // another vocabulary: another compile
    EXPECT_EQ(cache.num_compiled(), 2);
    ASSERT_TRUE(cache.get(b, v1).is_ok());  // evicts (a, v1), the least recently used
    EXPECT_EQ(cache.size(), 2u);
    ASSERT_TRUE(cache.get(a, v1).is_ok());
    EXPECT_EQ(cache.num_compiled(), 4);
    // A byte budget smaller than one grammar's masks keeps only the newest.
    GrammarCache tight(10, 1);
    ASSERT_TRUE(tight.get(a, v1).is_ok());
    ASSERT_TRUE(tight.get(b, v1).is_ok());
    EXPECT_EQ(tight.size(), 1u);
    auto bad = cache.get(spec_of(StructuredKind::kJsonSchema, "{not json"), v1);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("not valid JSON"), std::string::npos);
}

// The demo model's byte-level BPE vocabulary: token bytes round-trip through the tokenizer, and random walks under
// the masks of a JSON schema decode to valid JSON.
TEST(StructuredOutput, MasksOverARealTokenizerProduceValidJson) {
    auto tokenizer = Tokenizer::load(std::string(TACO_SOURCE_DIR) + "/models/demo");
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    auto vocab = TokenVocab::from_tokenizer(**tokenizer, (*tokenizer)->vocab_size() + 1);  // one padding id: the end
    for (const char* text : {"Hello world", " {\"a\": [1, 2]}", "caf\xC3\xA9 \n\t"}) {
        auto ids = (*tokenizer)->encode(text, false);
        ASSERT_TRUE(ids.is_ok());
        std::string bytes;
        for (int32_t id : *ids) bytes += vocab->bytes(id);
        EXPECT_EQ(bytes, text);
    }
    // <|im_end|> is special: only its marked form, which no grammar accepts but by tag_literal.
    EXPECT_EQ(vocab->bytes(2), std::string(1, kSpecialTokenMark) + "<|im_end|>" + kSpecialTokenMark);
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 12}, "temp": {"type": "number", "minimum": -50, "maximum": 60},
        "days": {"type": "array", "items": {"type": "string", "format": "date"}, "maxItems": 2}},
        "required": ["city", "temp", "days"], "additionalProperties": false})");
    GrammarCache cache;
    auto compiled = cache.get(spec_of(StructuredKind::kJsonSchema, schema.dump()), vocab);
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
    std::mt19937 rng(99);
    int finished = 0;
    for (int walk = 0; walk < 30; ++walk) {
        auto out = testing::random_walk(*compiled, rng, 300);
        if (!out) continue;
        ++finished;
        nlohmann::ordered_json value;
        ASSERT_NO_THROW(value = nlohmann::ordered_json::parse(*out)) << *out;
        EXPECT_EQ(testing::validate_json(value, schema, schema), "") << *out;
    }
    EXPECT_GT(finished, 10);
}

}  // namespace
}  // namespace taco::structured
