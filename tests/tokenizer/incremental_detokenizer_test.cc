// IncrementalDetokenizer: pieces are valid UTF-8 and concatenate (with flush) to decode(all ids), for every test
// tokenizer, on the corpus and on random id sequences that split characters across tokens.
#include "tokenizer/incremental_detokenizer.h"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/unicode_utils.h"
#include "tokenizer_test_util.h"

namespace taco {
namespace {

struct Streamed {
    std::vector<std::string> pieces;
    std::string text;
};

Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
    IncrementalDetokenizer detok(tok, {}, skip);
    Streamed out;
    for (int32_t id : ids) {
        out.pieces.push_back(detok.push(id));
        out.text += out.pieces.back();
    }
    out.pieces.push_back(detok.flush());
    out.text += out.pieces.back();
    return out;
}

std::unique_ptr<Tokenizer> load(const std::string& name) {
    std::string dir = name == "spm_bpe" ? test::source_path("tests/data/tokenizer/spm_bpe") : test::tokenizer_dir(name);
    auto tok = Tokenizer::load(dir);
    EXPECT_TRUE(tok.is_ok()) << tok.status().message();
    return tok.is_ok() ? std::move(tok).value() : nullptr;
}

class IncrementalDetokenizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(IncrementalDetokenizerTest, PiecesAreValidUtf8AndConcatenateToDecode) {
    if (GetParam() != "spm_bpe") {
        ASSERT_TRUE(test::require_tokenizer_cache());
    }
    auto tok = load(GetParam());
    ASSERT_TRUE(tok);
    auto lines = test::read_corpus(test::source_path("tests/data/tokenizer/corpus.jsonl"));
    for (const auto& text : lines) {
        auto ids = tok->encode(text, true);
        ASSERT_TRUE(ids.is_ok());
        for (bool skip : {false, true}) {
            Streamed s = stream(*tok, *ids, skip);
            ASSERT_EQ(s.text, tok->decode(*ids, skip)) << nlohmann::json(text).dump() << " skip=" << skip;
            for (const auto& piece : s.pieces) ASSERT_TRUE(unicode::is_valid_utf8(piece));
        }
    }
}

TEST_P(IncrementalDetokenizerTest, RandomIdsKeepTheInvariant) {
    if (GetParam() != "spm_bpe") {
        ASSERT_TRUE(test::require_tokenizer_cache());
    }
    auto tok = load(GetParam());
    ASSERT_TRUE(tok);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> any_id(0, tok->vocab_size() - 1);
    for (int trial = 0; trial < 30; ++trial) {
        std::vector<int32_t> ids(40);
        for (auto& id : ids) id = any_id(rng);
        for (bool skip : {false, true}) {
            Streamed s = stream(*tok, ids, skip);
            ASSERT_EQ(s.text, tok->decode(ids, skip)) << "trial " << trial << " skip=" << skip;
            for (const auto& piece : s.pieces) ASSERT_TRUE(unicode::is_valid_utf8(piece));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTokenizers, IncrementalDetokenizerTest,
                         ::testing::Values("llama3", "qwen2_5", "mistral_nemo", "gpt2", "deepseek_v3", "llama2",
                                           "gemma2", "spm_bpe"));

TEST(IncrementalDetokenizer, HoldsBackAPartialCharacterUntilItCompletes) {
    ASSERT_TRUE(test::require_tokenizer_cache());
    auto tok = load("llama3");
    ASSERT_TRUE(tok);
    // "😀" is four bytes; byte-level BPE splits rare emoji over several tokens.
    auto ids = tok->encode("a\xF0\x9F\xA6\x9C", false);  // "a🦜"
    ASSERT_TRUE(ids.is_ok());
    ASSERT_GE(ids->size(), 3u) << "expected the parrot emoji to span several tokens";
    IncrementalDetokenizer detok(*tok, {}, false);
    std::string text;
    for (size_t i = 0; i < ids->size(); ++i) {
        std::string piece = detok.push((*ids)[i]);
        EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "emitted U+FFFD at id " << i;
        if (i + 1 < ids->size() && i > 0) {
            EXPECT_EQ(piece, "") << "emitted part of the emoji at id " << i;
        }
        text += piece;
    }
    text += detok.flush();
    EXPECT_EQ(text, "a\xF0\x9F\xA6\x9C");
}

TEST(IncrementalDetokenizer, SpacingOfMetaspaceTokensMatchesFullDecode) {
    ASSERT_TRUE(test::require_tokenizer_cache());
    auto tok = load("llama2");
    ASSERT_TRUE(tok);
    auto ids = tok->encode("Hello world, how are you?", true);
    ASSERT_TRUE(ids.is_ok());
    Streamed s = stream(*tok, *ids, true);
    EXPECT_EQ(s.text, "Hello world, how are you?");
}

}  // namespace
}  // namespace taco
