// `taco_llm tokenize DIR [--no-special]`: one JSON string per stdin line -> one JSON array of ids per line.
// `taco_llm detokenize DIR [--skip-special-tokens]`: one JSON array of ids per line -> one JSON string per line.
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_util.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/command.h"

namespace taco::cli {
namespace {

struct TokenizeArgs {
    std::string dir;
    bool flag = false;  // --no-special / --skip-special-tokens
};

std::unique_ptr<Tokenizer> load_or_fail(const std::string& dir) {
    auto tok = Tokenizer::load(dir);
    if (!tok) fail(tok.status().message());
    return std::move(tok).value();
}

// Calls handle(j, line_no) for each stdin line parsed as JSON; invalid JSON fails naming the line.
template <class Handle>
void for_each_json_line(Handle handle) {
    std::string line;
    for (size_t line_no = 1; std::getline(std::cin, line); ++line_no) {
        auto j = parse_json(line);
        if (!j) fail(fmt::format("stdin line {}: {}", line_no, j.status().message()));
        handle(*j, line_no);
    }
    std::cout.flush();
}

void run_tokenize(const TokenizeArgs& args) {
    auto tok = load_or_fail(args.dir);
    for_each_json_line([&](const nlohmann::json& j, size_t line_no) {
        if (!j.is_string()) fail(fmt::format("stdin line {}: expected a JSON string", line_no));
        auto ids = tok->encode(j.get<std::string>(), !args.flag);
        if (!ids) fail(fmt::format("stdin line {}: {}", line_no, ids.status().message()));
        std::cout << nlohmann::json(*ids).dump() << '\n';
    });
}

void run_detokenize(const TokenizeArgs& args) {
    auto tok = load_or_fail(args.dir);
    for_each_json_line([&](const nlohmann::json& j, size_t line_no) {
        if (!j.is_array()) fail(fmt::format("stdin line {}: expected a JSON array of token ids", line_no));
        std::vector<int32_t> ids;
        for (const auto& v : j) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
                fail(fmt::format("stdin line {}: {} is not a token id", line_no, json_excerpt(v)));
            }
            ids.push_back(v.get<int32_t>());
        }
        std::string text = tok->decode(ids, args.flag);
        std::cout << nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    });
}

const CommandRegistrar kTokenize(40, [](CLI::App& app) {
    auto args = std::make_shared<TokenizeArgs>();
    auto* cmd = app.add_subcommand("tokenize", "Encode JSON strings (one per stdin line) to JSON id arrays");
    cmd->add_option("DIR", args->dir, "Folder with tokenizer.json, vocab.json + merges.txt, or tokenizer.model")
        ->required();
    cmd->add_flag("--no-special", args->flag, "Do not add special tokens (BOS/EOS) around each text");
    cmd->callback([args] { run_tokenize(*args); });
});

const CommandRegistrar kDetokenize(41, [](CLI::App& app) {
    auto args = std::make_shared<TokenizeArgs>();
    auto* cmd = app.add_subcommand("detokenize", "Decode JSON id arrays (one per stdin line) to JSON strings");
    cmd->add_option("DIR", args->dir, "Folder with tokenizer.json, vocab.json + merges.txt, or tokenizer.model")
        ->required();
    cmd->add_flag("--skip-special-tokens", args->flag, "Leave special tokens out of the text");
    cmd->callback([args] { run_detokenize(*args); });
});

}  // namespace
}  // namespace taco::cli
