// Bad input is a Status naming what is wrong, never a crash.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace taco {
namespace {

// A tiny byte-level BPE tokenizer.json with `model`, `pre_tokenizer` and `normalizer` spliced in.
std::string tokenizer_json(const std::string& model, const std::string& pre = R"({"type": "ByteLevel"})",
                           const std::string& normalizer = "null") {
    return R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<s>", "special": true, "normalized": false}],
        "normalizer": )" +
           normalizer + R"(, "pre_tokenizer": )" + pre + R"(, "post_processor": null,
        "decoder": {"type": "ByteLevel"}, "model": )" +
           model + "}";
}

const char* kModel =
    R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4}, "merges": ["a b", "Ġ a"]})";

TEST(TokenizerErrors, InvalidJsonNamesTheFile) {
    auto tok = Tokenizer::from_json_text("{\"model\": ", "", "my/tokenizer.json");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("my/tokenizer.json"), std::string::npos) << tok.status().message();
}

TEST(TokenizerErrors, UnknownModelTypeIsNamed) {
    auto tok = Tokenizer::from_json_text(tokenizer_json(R"({"type": "FancyModel", "vocab": {}})"), "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("unknown model type 'FancyModel'"), std::string::npos)
        << tok.status().message();
}

TEST(TokenizerErrors, UnknownPreTokenizerTypeIsNamed) {
    auto tok = Tokenizer::from_json_text(tokenizer_json(kModel, R"({"type": "Sparkle"})"), "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("unknown pre_tokenizer type 'Sparkle'"), std::string::npos)
        << tok.status().message();
}

TEST(TokenizerErrors, UnknownNormalizerTypeIsNamed) {
    auto tok =
        Tokenizer::from_json_text(tokenizer_json(kModel, R"({"type": "ByteLevel"})", R"({"type": "Shout"})"), "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("unknown normalizer type 'Shout'"), std::string::npos)
        << tok.status().message();
}

TEST(TokenizerErrors, BadRegexIsNamed) {
    auto tok = Tokenizer::from_json_text(
        tokenizer_json(kModel, R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})"), "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("(unclosed"), std::string::npos) << tok.status().message();
}

TEST(TokenizerErrors, MergeOutsideVocabularyIsNamed) {
    auto tok =
        Tokenizer::from_json_text(tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]})"), "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("'z' is not in the vocab"), std::string::npos) << tok.status().message();
}

TEST(TokenizerErrors, TruncatedVocabularyIsAnError) {
    auto tok = Tokenizer::from_json_text(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": )", "");
    ASSERT_FALSE(tok.is_ok());
}

TEST(TokenizerErrors, MissingFolderSaysWhatItLookedFor) {
    auto tok = Tokenizer::load("/nonexistent/folder");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos) << tok.status().message();
}

TEST(TokenizerErrors, InvalidUtf8InputIsRejectedWithItsOffset) {
    auto tok = Tokenizer::from_json_text(tokenizer_json(kModel), "");
    ASSERT_TRUE(tok.is_ok()) << tok.status().message();
    auto ids = (*tok)->encode(std::string("ab\xC3(", 4));
    ASSERT_FALSE(ids.is_ok());
    EXPECT_NE(ids.status().message().find("byte 2"), std::string::npos) << ids.status().message();
}

TEST(TokenizerErrors, SmallTokenizerEncodesAndDecodes) {
    auto tok = Tokenizer::from_json_text(tokenizer_json(kModel, R"({"type": "ByteLevel", "add_prefix_space": false})"),
                                         R"({"bos_token": "<s>"})");
    ASSERT_TRUE(tok.is_ok()) << tok.status().message();
    auto ids = (*tok)->encode("ab a<s>");
    ASSERT_TRUE(ids.is_ok());
    EXPECT_EQ(*ids, (std::vector<int32_t>{2, 4, 5}));
    EXPECT_EQ((*tok)->decode(*ids), "ab a<s>");
    EXPECT_EQ((*tok)->decode(*ids, true), "ab a");
    EXPECT_EQ((*tok)->bos_token_id(), 5);
    EXPECT_TRUE((*tok)->is_special(5));
    EXPECT_FALSE((*tok)->is_special(2));
    EXPECT_EQ((*tok)->token_to_id("Ġa"), 4);
    EXPECT_EQ((*tok)->id_to_token(2), "ab");
    EXPECT_EQ((*tok)->vocab_size(), 6);
    EXPECT_EQ((*tok)->decode({2, 999}), "ab");  // unknown ids are skipped
}

// Found by fuzz_tokenizer_json: an added token's flag of the wrong type threw out of the loader (the process ended).
TEST(TokenizerErrors, AddedTokenFlagOfTheWrongTypeIsNamed) {
    const std::string text = R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<s>", "special": "<s>"}],
        "normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, "post_processor": null,
        "decoder": {"type": "ByteLevel"}, "model": )" +
                             std::string(kModel) + "}";
    auto tok = Tokenizer::from_json_text(text, "");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("\"special\" \"<s>\", not true or false"), std::string::npos)
        << tok.status().message();
}

// Any component's optional field of the wrong type is an error naming the file, not an exception.
TEST(TokenizerErrors, ComponentFieldOfTheWrongTypeNamesTheFile) {
    auto tok = Tokenizer::from_json_text(
        tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "fuse_unk": "yes"})"), "",
        "t/tokenizer.json");
    ASSERT_FALSE(tok.is_ok());
    EXPECT_NE(tok.status().message().find("t/tokenizer.json: a field has the wrong type"), std::string::npos)
        << tok.status().message();
}

// tokenizer_config.json flags that are null (saved from legacy=None and the like) mean their defaults, as in
// transformers; nlohmann's value() threw on them and the load failed.
TEST(TokenizerErrors, NullConfigFlagsMeanTheirDefaults) {
    const std::string text = R"({"version": "1.0", "added_tokens": [
        {"id": 0, "content": "<unk>", "special": true, "normalized": false},
        {"id": 1, "content": "<s>", "special": true, "normalized": false},
        {"id": 2, "content": "</s>", "special": true, "normalized": false}],
        "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
        "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true,
                  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "x": 4, "\u2581x": 5},
                  "merges": ["\u2581 x"]}})";
    auto with_nulls = Tokenizer::from_json_text(
        text, R"({"tokenizer_class": "LlamaTokenizer", "legacy": null, "add_prefix_space": null,
                  "add_bos_token": null, "add_eos_token": null, "clean_up_tokenization_spaces": null})");
    ASSERT_TRUE(with_nulls.is_ok()) << with_nulls.status().message();
    auto defaults = Tokenizer::from_json_text(text, R"({"tokenizer_class": "LlamaTokenizer"})");
    ASSERT_TRUE(defaults.is_ok()) << defaults.status().message();
    for (const char* s : {" x", "x", "</s>x", "</s> x"}) {
        EXPECT_EQ(*(*with_nulls)->encode(s, true), *(*defaults)->encode(s, true)) << s;
    }
    // legacy=False (the default): Metaspace prepends only at the start of the text, not after a special token.
    EXPECT_EQ(*(*with_nulls)->encode("</s>x", false), (std::vector<int32_t>{2, 4}));
    EXPECT_EQ(*(*with_nulls)->encode("x", false), (std::vector<int32_t>{5}));
}

}  // namespace
}  // namespace taco
