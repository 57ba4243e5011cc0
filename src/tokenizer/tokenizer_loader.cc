// Tokenizer::load and the tokenizer.json / tokenizer_config.json readers.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/json_util.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unigram_model.h"
#include "tokenizer/wordpiece_model.h"

namespace taco {
namespace {

Result<std::unique_ptr<Model>> make_model(const nlohmann::json& j, ScannedTokenizerJson& scanned) {
    if (!j.is_object()) return error("\"model\" must be an object");
    std::string type = j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
    if (type.empty() && j.contains("merges")) type = "BPE";  // old files omit the type
    if (type == "BPE") {
        TACO_ASSIGN_OR_RETURN(auto bpe, BpeModel::from_json(j, scanned.has_vocab ? &scanned.vocab : nullptr,
                                                            scanned.has_merges ? &scanned.merges : nullptr));
        return std::unique_ptr<Model>(std::move(bpe));
    }
    if (type == "WordPiece") {
        TACO_ASSIGN_OR_RETURN(auto wp, WordPieceModel::from_json(j, scanned.has_vocab ? &scanned.vocab : nullptr));
        return std::unique_ptr<Model>(std::move(wp));
    }
    if (type == "Unigram") {
        TACO_ASSIGN_OR_RETURN(auto unigram, UnigramModel::from_json(j));
        return std::unique_ptr<Model>(std::move(unigram));
    }
    return error("unknown model type '{}' (supported: BPE, WordPiece, Unigram)", type);
}

Result<std::vector<AddedToken>> parse_added_tokens(const nlohmann::json& j) {
    std::vector<AddedToken> tokens;
    if (j.is_null()) return tokens;
    if (!j.is_array()) return error("\"added_tokens\" must be an array");
    for (const auto& t : j) {
        if (!t.is_object() || !t.contains("content") || !t["content"].is_string() || !t.contains("id") ||
            !t["id"].is_number_integer()) {
            return error("added_tokens: entry {} needs \"id\" and \"content\"", json_excerpt(t));
        }
        const int64_t id = t["id"].get<int64_t>();
        if (id < 0 || id > limits::kMaxTokenId)
            return error("added_tokens: entry {} has id {}, outside [0, {}] (limits::kMaxTokenId)", json_excerpt(t), id,
                         limits::kMaxTokenId);
        AddedToken a;
        a.content = t["content"].get<std::string>();
        a.id = int32_t(id);
        // The flags are booleans when present ("special": "<s>" is an error naming the entry and the key).
        for (const char* key : {"single_word", "lstrip", "rstrip", "special", "normalized"})
            if (t.contains(key) && !t[key].is_boolean())
                return error("added_tokens: entry {} has \"{}\" {}, not true or false", json_excerpt(t), key,
                             json_excerpt(t[key]));
        a.single_word = t.value("single_word", false);
        a.lstrip = t.value("lstrip", false);
        a.rstrip = t.value("rstrip", false);
        a.special = t.value("special", false);
        a.normalized = t.value("normalized", !a.special);
        tokens.push_back(std::move(a));
    }
    return tokens;
}

// One read of the whole file (tokenizer.json files are tens of MB; stream-based reads are several times slower).
Result<std::string> read_file(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) return error("{}: cannot open file", path);
    std::string data;
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f.get())) > 0) data.append(buffer, n);
    if (std::ferror(f.get())) return error("{}: read error", path);
    return data;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json_text(const std::string& tokenizer_json,
                                                             const std::string& config_json, const std::string& name) {
    // The components read their optional fields with nlohmann's value(), which throws on a field of the wrong type
    // (a string where a boolean belongs): that is an error naming the file, never an exception out of the loader.
    try {
        return build_from_json_text(tokenizer_json, config_json, name);
    } catch (const nlohmann::json::exception& e) {
        return error("{}: a field has the wrong type ({})", name, e.what());
    }
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::build_from_json_text(const std::string& tokenizer_json,
                                                                   const std::string& config_json,
                                                                   const std::string& name) {
    auto scanned = scan_tokenizer_json(tokenizer_json);
    if (!scanned) return scanned.status().with_context(name);
    auto parsed = parse_json(scanned->rest);
    if (!parsed) return parsed.status().with_context(name);
    nlohmann::json j = std::move(*parsed);
    nlohmann::json config;
    if (!config_json.empty()) {
        auto parsed_config = parse_json(config_json);
        if (!parsed_config) return parsed_config.status().with_context("tokenizer_config.json");
        config = std::move(*parsed_config);
    }
    if (!j.is_object()) return error("{}: expected a JSON object", name);
    if (!j.contains("model")) return error("{}: missing \"model\"", name);
    auto impl = std::make_unique<Impl>();
    auto fail = [&](const Status& s) { return s.with_context(name); };

    auto model = make_model(j["model"], *scanned);
    if (!model) return fail(model.status());
    impl->model = std::move(model).value();
    auto normalizer = make_normalizer(j.value("normalizer", nlohmann::json()));
    if (!normalizer) return fail(normalizer.status());
    impl->normalizer = std::move(normalizer).value();
    auto pre = make_pre_tokenizer(j.value("pre_tokenizer", nlohmann::json()));
    if (!pre) return fail(pre.status());
    impl->pre_tokenizer = std::move(pre).value();
    auto post = make_post_processor(j.value("post_processor", nlohmann::json()));
    if (!post) return fail(post.status());
    impl->post_processor = std::move(post).value();
    auto decoder = make_decoder(j.value("decoder", nlohmann::json()));
    if (!decoder) return fail(decoder.status());
    impl->decoder = std::move(decoder).value();

    auto added = parse_added_tokens(j.value("added_tokens", nlohmann::json()));
    if (!added) return fail(added.status());
    // An added token that is also in the model's vocabulary keeps the model's id (tokenizers' add_tokens).
    for (auto& t : *added) {
        if (auto id = impl->model->token_to_id(t.content)) t.id = *id;
    }
    impl->added.add(*added, impl->normalizer.get());

    Status s = apply_tokenizer_config(*impl, config);
    if (!s) return s.with_context("tokenizer_config.json");
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& dir) {
    std::string json_path = join_path(dir, "tokenizer.json");
    std::string config_path = join_path(dir, "tokenizer_config.json");
    std::string config_text;
    if (file_exists(config_path)) {
        TACO_ASSIGN_OR_RETURN(config_text, read_text_file(config_path));
    }
    if (file_exists(json_path)) {
        TACO_ASSIGN_OR_RETURN(std::string text, read_file(json_path));
        return from_json_text(text, config_text, json_path);
    }
    nlohmann::json config;
    if (!config_text.empty()) {
        TACO_ASSIGN_OR_RETURN(config, read_json_file(config_path));
    }
    std::unique_ptr<Impl> impl;
    std::string vocab_path = join_path(dir, "vocab.json"), merges_path = join_path(dir, "merges.txt");
    std::string spm_path = join_path(dir, "tokenizer.model");
    if (file_exists(vocab_path) && file_exists(merges_path)) {
        TACO_ASSIGN_OR_RETURN(impl, load_vocab_merges(vocab_path, merges_path));
    } else if (file_exists(spm_path)) {
        TACO_ASSIGN_OR_RETURN(impl, load_sentencepiece(spm_path));
    } else {
        return error("{}: no tokenizer.json, vocab.json + merges.txt, or tokenizer.model", dir);
    }
    Status s = apply_tokenizer_config(*impl, config);
    if (!s) return s.with_context(config_path);
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

}  // namespace taco
