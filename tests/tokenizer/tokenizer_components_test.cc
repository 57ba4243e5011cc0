// Normalizers, pre-tokenizers and decoders one at a time against the Rust tokenizers library
// (tests/data/tokenizer/component_goldens.json, from tools/make_component_goldens.mjs).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace taco {
namespace {

using nlohmann::json;

json goldens() {
    auto j = read_json_file(test::source_path("tests/data/tokenizer/component_goldens.json"));
    EXPECT_TRUE(j.is_ok()) << j.status().message();
    return j.is_ok() ? *j : json::object();
}

TEST(TokenizerComponents, NormalizersMatchRustTokenizers) {
    json g = goldens();
    ASSERT_FALSE(g["normalizers"].empty());
    for (const auto& entry : g["normalizers"]) {
        auto n = make_normalizer(entry["json"]);
        ASSERT_TRUE(n.is_ok()) << n.status().message();
        for (const auto& c : entry["cases"]) {
            EXPECT_EQ((*n)->normalize(c[0].get<std::string>()), c[1].get<std::string>())
                << entry["json"].dump() << " on " << c[0].dump();
        }
    }
}

TEST(TokenizerComponents, PreTokenizersMatchRustTokenizers) {
    json g = goldens();
    ASSERT_FALSE(g["pre_tokenizers"].empty());
    for (const auto& entry : g["pre_tokenizers"]) {
        auto p = make_pre_tokenizer(entry["json"]);
        ASSERT_TRUE(p.is_ok()) << p.status().message();
        for (const auto& c : entry["cases"]) {
            std::vector<TextPiece> pieces(1);
            pieces[0].text = c[0].get<std::string>();
            (*p)->pre_tokenize(pieces);
            std::vector<std::string> got;
            for (const auto& piece : pieces) got.push_back(piece.text);
            EXPECT_EQ(json(got), c[1]) << entry["json"].dump() << " on " << c[0].dump();
            if ((*p)->can_stream()) {
                std::vector<std::string> streamed;
                (*p)->stream(c[0].get<std::string>(), 0, [&](std::string_view w) { streamed.emplace_back(w); });
                EXPECT_EQ(json(streamed), c[1]) << "streamed " << entry["json"].dump() << " on " << c[0].dump();
            }
        }
    }
}

TEST(TokenizerComponents, DecodersMatchRustTokenizers) {
    json g = goldens();
    ASSERT_FALSE(g["decoders"].empty());
    for (const auto& entry : g["decoders"]) {
        auto d = make_decoder(entry["json"]);
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        for (const auto& c : entry["cases"]) {
            EXPECT_EQ((*d)->decode(c[0].get<std::vector<std::string>>()), c[1].get<std::string>())
                << entry["json"].dump() << " on " << c[0].dump();
        }
    }
}

}  // namespace
}  // namespace taco

namespace taco {
namespace {

TEST(TokenizerComponents, WordPieceAndUnigramPipelinesMatchRustTokenizers) {
    json g = goldens();
    ASSERT_FALSE(g["tokenizers"].empty());
    for (const auto& entry : g["tokenizers"]) {
        std::string name = entry["name"];
        auto tok = Tokenizer::load(test::source_path("tests/data/tokenizer/" + name));
        ASSERT_TRUE(tok.is_ok()) << tok.status().message();
        size_t failures = 0;
        for (const auto& row : entry["rows"]) {
            std::string text = row["text"];
            auto ids = (*tok)->encode(text, true);
            auto plain = (*tok)->encode(text, false);
            ASSERT_TRUE(ids.is_ok() && plain.is_ok());
            std::vector<int32_t> golden_ids = row["ids"];
            bool ok = *ids == golden_ids && *plain == row["ids_plain"].get<std::vector<int32_t>>() &&
                      (*tok)->decode(golden_ids, false) == row["decode"].get<std::string>() &&
                      (*tok)->decode(golden_ids, true) == row["decode_skip"].get<std::string>();
            if (!ok && failures++ < 5) {
                ADD_FAILURE() << name << " " << json(text).dump() << "\n got  " << json(*ids).dump() << " "
                              << json((*tok)->decode(golden_ids, false)).dump() << "\n want " << row["ids"].dump()
                              << " " << row["decode"].dump();
            }
        }
        EXPECT_EQ(failures, 0u) << name;
    }
}

}  // namespace
}  // namespace taco
