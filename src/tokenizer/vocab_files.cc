// GPT-2 style folders: vocab.json (token -> id) + merges.txt ("a b" per line, optional "#version" header),
// byte-level BPE as GPT2Tokenizer builds it.
#include <sstream>

#include "core/file_util.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/tokenizer_impl.h"

namespace taco {

Result<std::unique_ptr<Tokenizer::Impl>> load_vocab_merges(const std::string& vocab_path,
                                                           const std::string& merges_path) {
    TACO_ASSIGN_OR_RETURN(nlohmann::json vocab_json, read_json_file(vocab_path));
    if (!vocab_json.is_object()) return error("{}: expected an object of token -> id", vocab_path);
    std::vector<std::pair<std::string, int32_t>> vocab;
    for (const auto& [token, id] : vocab_json.items()) {
        if (!id.is_number_integer()) return error("{}: token '{}' has a non-integer id", vocab_path, token);
        vocab.emplace_back(token, id.get<int32_t>());
    }
    TACO_ASSIGN_OR_RETURN(std::string merges_text, read_text_file(merges_path));
    std::vector<std::pair<std::string, std::string>> merges;
    std::istringstream lines(merges_text);
    std::string line;
    for (size_t line_no = 1; std::getline(lines, line); ++line_no) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
            return error("{}:{}: expected two tokens separated by one space, got '{}'", merges_path, line_no, line);
        }
        merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    auto model = BpeModel::create(std::move(vocab), merges, BpeOptions{});
    if (!model) return model.status().with_context(merges_path);

    auto impl = std::make_unique<Tokenizer::Impl>();
    impl->model = std::move(model).value();
    TACO_ASSIGN_OR_RETURN(impl->pre_tokenizer,
                          make_pre_tokenizer(nlohmann::json::parse(
                              R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})")));
    TACO_ASSIGN_OR_RETURN(impl->decoder, make_decoder(nlohmann::json::parse(R"({"type": "ByteLevel"})")));
    // GPT2Tokenizer's defaults: <|endoftext|> is bos, eos and unk.
    if (auto id = impl->model->token_to_id("<|endoftext|>")) {
        AddedToken t;
        t.content = "<|endoftext|>";
        t.id = *id;
        t.special = true;
        t.normalized = false;
        impl->added.add({t}, nullptr);
        impl->bos_id = impl->eos_id = *id;
    }
    return impl;
}

}  // namespace taco
