// Special tokens in grammars: a tool-call format's tag that is one special token of the vocabulary (Mistral NeMo's
// [TOOL_CALLS]) may be written as that token where the grammar asks for the tag, as well as spelled in ordinary
// tokens; nowhere else can a special token be sampled. Real tokenizers from scripts/setup_test_data.sh (skipped
// without them).
#include <filesystem>

#include <gtest/gtest.h>

#include "structured/grammar_matcher.h"
#include "structured/json_schema_grammar.h"
#include "structured/token_vocab.h"
#include "structured_test_util.h"
#include "tokenizer/tokenizer.h"

namespace taco::structured {
namespace {

using ojson = nlohmann::ordered_json;

std::unique_ptr<Tokenizer> load(const char* name) {
    const std::string dir = std::string(TACO_SOURCE_DIR) + "/.cache/tokenizers/" + name;
    if (!std::filesystem::exists(dir + "/tokenizer.json")) return nullptr;
    auto t = Tokenizer::load(dir);
    EXPECT_TRUE(t.is_ok()) << t.status().message();
    return t.is_ok() ? std::move(*t) : nullptr;
}

std::shared_ptr<const CompiledGrammar> sequence(const std::shared_ptr<const TokenVocab>& vocab,
                                                const JsonSequenceFormat& format) {
    const ojson schema = ojson::parse(R"({"type": "object", "properties": {"name": {"const": "f"}, "arguments":
        {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false}},
        "required": ["name", "arguments"], "additionalProperties": false})");
    auto g = json_sequence_grammar(schema, format);
    EXPECT_TRUE(g.is_ok()) << g.status().message();
    return std::make_shared<const CompiledGrammar>(std::move(*g), vocab);
}

TEST(SpecialTokenGrammar, MistralToolCallsIsMatchableAsItsSpecialTokenWhereTheGrammarAsksForIt) {
    auto tokenizer = load("mistral_nemo");
    if (!tokenizer) GTEST_SKIP() << ".cache/tokenizers/mistral_nemo missing (scripts/setup_test_data.sh)";
    const int32_t tool_calls = tokenizer->token_to_id("[TOOL_CALLS]").value_or(-1);
    ASSERT_GE(tool_calls, 0);
    ASSERT_TRUE(tokenizer->is_special(tool_calls));
    const int32_t eos = tokenizer->token_to_id("</s>").value_or(-1);
    auto vocab = TokenVocab::from_tokenizer(*tokenizer, tokenizer->vocab_size());
    std::vector<uint32_t> words(size_t(vocab->num_mask_words()));

    // The mistral parser's constrained format: the special token is allowed first, then the JSON list follows.
    GrammarMatcher calls(sequence(vocab, {"[TOOL_CALLS][", ", ", "]", {}, {}}), {eos});
    calls.fill_next_token_bitmask(words);
    EXPECT_TRUE(testing::bit(words, tool_calls));
    ASSERT_TRUE(calls.accept_token(tool_calls));
    for (const char* text : {"[", "{\"name\": \"f\", \"arguments\": {\"x\": 1}}", "]"})
        ASSERT_TRUE(calls.accept_bytes(text)) << text;
    EXPECT_TRUE(calls.can_finish());
    // Spelled in ordinary tokens too.
    GrammarMatcher spelled(sequence(vocab, {"[TOOL_CALLS][", ", ", "]", {}, {}}), {eos});
    EXPECT_TRUE(spelled.accept_bytes("[TOOL_CALLS]["));
    EXPECT_FALSE(spelled.accept_token(tool_calls));  // past the tag it is ordinary JSON again

    // Elsewhere no special token is ever allowed: a plain JSON object grammar, at its start and inside a string.
    auto object = json_object_grammar();
    ASSERT_TRUE(object.is_ok());
    GrammarMatcher plain(std::make_shared<const CompiledGrammar>(std::move(*object), vocab), {eos});
    for (const char* prefix : {"", "{\"a\": \"x"}) {
        ASSERT_TRUE(plain.accept_bytes(prefix));
        plain.fill_next_token_bitmask(words);
        for (int32_t id = 0; id < tokenizer->vocab_size(); ++id)
            if (tokenizer->is_special(id)) EXPECT_FALSE(testing::bit(words, id)) << id << " after '" << prefix << "'";
    }
}

TEST(SpecialTokenGrammar, HermesToolCallTagIsMatchableAsOneToken) {
    auto tokenizer = load("qwen2_5");
    if (!tokenizer) GTEST_SKIP() << ".cache/tokenizers/qwen2_5 missing (scripts/setup_test_data.sh)";
    const int32_t open = tokenizer->token_to_id("<tool_call>").value_or(-1);
    const int32_t close = tokenizer->token_to_id("</tool_call>").value_or(-1);
    ASSERT_GE(open, 0);
    ASSERT_GE(close, 0);
    const int32_t end = tokenizer->token_to_id("<|im_end|>").value_or(-1);
    auto vocab = TokenVocab::from_tokenizer(*tokenizer, tokenizer->vocab_size());
    std::vector<uint32_t> words(size_t(vocab->num_mask_words()));
    // Qwen2.5's tags are added tokens (special or not: either way one token where the grammar asks for the tag).
    GrammarMatcher m(sequence(vocab, {"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}, {}}),
                     {end});
    m.fill_next_token_bitmask(words);
    EXPECT_TRUE(testing::bit(words, open));
    ASSERT_TRUE(m.accept_token(open));
    ASSERT_TRUE(m.accept_bytes("\n{\"name\": \"f\", \"arguments\": {\"x\": 2}}\n"));
    m.fill_next_token_bitmask(words);
    EXPECT_TRUE(testing::bit(words, close));
    ASSERT_TRUE(m.accept_token(close));
    EXPECT_TRUE(m.can_finish());
    // Byte-level BPE has a token for byte 0xFF (the mark of special tokens' bytes): it never spells a marked tag.
    const int32_t byte_ff = tokenizer->token_to_id("\xC3\xBF").value_or(-1);  // U+00FF, byte 0xFF's symbol
    ASSERT_GE(byte_ff, 0);
    EXPECT_FALSE(vocab->matchable(byte_ff));
    GrammarMatcher spelled(
        sequence(vocab, {"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}, {}}), {end});
    EXPECT_FALSE(spelled.accept_token(byte_ff));
}

}  // namespace
}  // namespace taco::structured
