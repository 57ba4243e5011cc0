// What transformers (5.x) applies on top of tokenizer.json, read from tokenizer_config.json: the pipeline its
// tokenizer class rebuilds, named special tokens, bos/eos, add_bos_token / add_eos_token when the file has no
// post-processor, clean_up_tokenization_spaces.
#include "tokenizer/bpe_model.h"
#include "tokenizer/tokenizer_impl.h"

namespace taco {
namespace {

// A special token named in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key) {
    if (!config.is_object() || !config.contains(key)) return std::nullopt;
    const auto& v = config[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return std::nullopt;
}

// A flag of tokenizer_config.json as transformers reads it: `unset` where the key is missing or null (None: every
// flag read here means its default then), else Python truthiness (false, 0, "" and empty containers are false).
// nlohmann's value(key, bool) threw on a null ("legacy": null is in configs saved with legacy=None) and failed the
// whole load.
bool config_flag(const nlohmann::json& config, const char* key, bool unset) {
    if (!config.is_object() || !config.contains(key)) return unset;
    const auto& v = config[key];
    switch (v.type()) {
        case nlohmann::json::value_t::null: return unset;
        case nlohmann::json::value_t::boolean: return v.get<bool>();
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
        case nlohmann::json::value_t::number_float: return v.get<double>() != 0.0;
        case nlohmann::json::value_t::string:
        case nlohmann::json::value_t::array:
        case nlohmann::json::value_t::object:
        case nlohmann::json::value_t::binary: return !v.empty();
        case nlohmann::json::value_t::discarded: return unset;
    }
    return unset;
}

std::optional<int32_t> lookup(const Tokenizer::Impl& impl, const std::string& token) {
    if (auto id = impl.added.token_to_id(token)) return id;
    return impl.model->token_to_id(token);
}

std::string tokenizer_class(const nlohmann::json& config) {
    if (!config.is_object() || !config.contains("tokenizer_class") || !config["tokenizer_class"].is_string()) return "";
    return config["tokenizer_class"].get<std::string>();
}

// transformers' LlamaTokenizer ignores the file's normalizer, pre-tokenizer and decoder and builds a Metaspace
// pipeline over the same BPE vocabulary. Only applied to SentencePiece-style vocabularies (byte_fallback): for a
// byte-level vocabulary mislabelled as Llama (DeepSeek-V3's files) that rebuild produces wrong ids, and the file's
// own pipeline is kept.
Status apply_llama_pipeline(Tokenizer::Impl& impl, const nlohmann::json& config) {
    auto* bpe = dynamic_cast<BpeModel*>(impl.model.get());
    if (!bpe || !bpe->options().byte_fallback) return Status::ok();
    // LlamaTokenizer(legacy=False, add_prefix_space=None): add_prefix_space None means true; _get_prepend_scheme
    // tests `not legacy`, so a null legacy is false like the default.
    bool add_prefix_space = config_flag(config, "add_prefix_space", true);
    bool legacy = config_flag(config, "legacy", false);
    PrependScheme scheme = !add_prefix_space ? PrependScheme::kNever
                           : legacy          ? PrependScheme::kAlways
                                             : PrependScheme::kFirst;
    BpeOptions options = bpe->options();
    options.unk_token.reset();
    options.fuse_unk = true;
    options.byte_fallback = true;
    options.ignore_merges = false;
    bpe->set_word_options(options);
    impl.normalizer.reset();
    impl.pre_tokenizer = make_metaspace_pre_tokenizer("\xE2\x96\x81", scheme, false);
    nlohmann::json decoders = nlohmann::json::array();
    decoders.push_back({{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (add_prefix_space) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    TACO_ASSIGN_OR_RETURN(impl.decoder, make_decoder({{"type", "Sequence"}, {"decoders", decoders}}));
    return Status::ok();
}

}  // namespace

Status apply_tokenizer_config(Tokenizer::Impl& impl, const nlohmann::json& config) {
    if (!config.is_null() && !config.is_object()) return error("tokenizer_config.json must hold an object");
    std::string cls = tokenizer_class(config);
    if (cls == "LlamaTokenizer" || cls == "LlamaTokenizerFast")
        TACO_RETURN_IF_ERROR(apply_llama_pipeline(impl, config));

    auto bos = config_token(config, "bos_token");
    auto eos = config_token(config, "eos_token");
    if (bos) impl.bos_id = lookup(impl, *bos);
    if (eos) impl.eos_id = lookup(impl, *eos);

    // transformers registers every named special token with the backend as special: an added token gets the flag
    // (decode with skip_special_tokens drops it), a vocabulary token becomes a special added token.
    std::vector<std::string> named;
    for (const char* key :
         {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
        if (auto t = config_token(config, key)) named.push_back(*t);
    }
    if (cls == "GemmaTokenizer" && !config_token(config, "mask_token")) named.push_back("<mask>");  // class default
    for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
        if (!config.is_object() || !config.contains(key)) continue;
        auto add_value = [&](const nlohmann::json& v) {
            if (v.is_string()) named.push_back(v.get<std::string>());
            if (v.is_object() && v.contains("content") && v["content"].is_string())
                named.push_back(v["content"].get<std::string>());
        };
        const auto& list = config[key];
        if (list.is_array()) {
            for (const auto& v : list) add_value(v);
        } else if (list.is_object()) {
            for (const auto& [k, v] : list.items()) add_value(v);
        }
    }
    std::vector<AddedToken> updates;
    for (const auto& content : named) {
        if (auto id = impl.added.token_to_id(content)) {
            const AddedToken* existing = impl.added.find(*id);
            if (existing && !existing->special) {
                AddedToken t = *existing;
                t.special = true;
                updates.push_back(std::move(t));
            }
            continue;
        }
        auto id = impl.model->token_to_id(content);
        if (!id) continue;  // a token outside the vocabulary would need an id the model's embeddings lack
        AddedToken t;
        t.content = content;
        t.id = *id;
        t.special = true;
        t.normalized = false;
        updates.push_back(std::move(t));
    }
    if (!updates.empty()) impl.added.add(updates, impl.normalizer.get());

    // Without a post-processor in the file, TokenizersBackend installs "bos $A eos" from the flags (default off).
    if (!impl.post_processor) {
        bool add_bos = config_flag(config, "add_bos_token", false) && impl.bos_id;
        bool add_eos = config_flag(config, "add_eos_token", false) && impl.eos_id;
        std::vector<int32_t> prefix, suffix;
        if (add_bos) prefix.push_back(*impl.bos_id);
        if (add_eos) suffix.push_back(*impl.eos_id);
        impl.post_processor = make_bos_eos_post_processor(std::move(prefix), std::move(suffix));
    }
    bool is_bpe = dynamic_cast<const BpeModel*>(impl.model.get()) != nullptr;
    impl.clean_up_tokenization_spaces = !is_bpe && config_flag(config, "clean_up_tokenization_spaces", false);
    return Status::ok();
}

}  // namespace taco
