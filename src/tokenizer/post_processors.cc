#include "tokenizer/post_processors.h"

#include "core/json_util.h"

#include <string>

namespace taco {
namespace {

// Wraps the sequence in fixed ids (TemplateProcessing's single template, Bert/Roberta's [CLS] A [SEP]).
class WrapPostProcessor final : public PostProcessor {
public:
    WrapPostProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
        : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        if (!add_special_tokens) return;
        ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
        ids.insert(ids.end(), suffix_.begin(), suffix_.end());
    }

private:
    std::vector<int32_t> prefix_, suffix_;
};

class NoOpPostProcessor final : public PostProcessor {
public:
    void process(std::vector<int32_t>&, bool) const override {}
};

class SequencePostProcessor final : public PostProcessor {
public:
    explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        for (const auto& p : parts_) p->process(ids, add_special_tokens);
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> parts_;
};

Result<std::unique_ptr<PostProcessor>> make_template(const nlohmann::json& j) {
    if (!j.contains("single") || !j["single"].is_array())
        return error("post_processor TemplateProcessing: missing \"single\"");
    const auto& specials = j.contains("special_tokens") ? j["special_tokens"] : nlohmann::json::object();
    std::vector<int32_t> prefix, suffix;
    bool seen_sequence = false;
    for (const auto& piece : j["single"]) {
        if (piece.contains("Sequence")) {
            if (seen_sequence) return error("post_processor TemplateProcessing: \"single\" has two sequences");
            seen_sequence = true;
            continue;
        }
        if (!piece.contains("SpecialToken") || !piece["SpecialToken"].contains("id")) {
            return error("post_processor TemplateProcessing: bad template piece {}", json_excerpt(piece));
        }
        std::string name = piece["SpecialToken"]["id"].get<std::string>();
        if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array()) {
            return error("post_processor TemplateProcessing: special token '{}' is not in \"special_tokens\"", name);
        }
        auto& target = seen_sequence ? suffix : prefix;
        for (const auto& id : specials[name]["ids"]) {
            if (!id.is_number_integer()) return error("post_processor TemplateProcessing: bad id for '{}'", name);
            target.push_back(id.get<int32_t>());
        }
    }
    return std::unique_ptr<PostProcessor>(new WrapPostProcessor(std::move(prefix), std::move(suffix)));
}

Result<int32_t> pair_id(const nlohmann::json& j, const char* key, const char* type) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 || !j[key][1].is_number_integer()) {
        return error("post_processor {}: \"{}\" must be [token, id]", type, key);
    }
    return j[key][1].get<int32_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> make_bos_eos_post_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
    return std::make_unique<WrapPostProcessor>(std::move(prefix), std::move(suffix));
}

Result<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j) {
    if (j.is_null()) return std::unique_ptr<PostProcessor>();
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        return error("post_processor: expected an object with a \"type\", got {}", json_excerpt(j));
    }
    std::string type = j["type"];
    if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(new NoOpPostProcessor());  // offsets only
    if (type == "TemplateProcessing") return make_template(j);
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        TACO_ASSIGN_OR_RETURN(int32_t cls, pair_id(j, "cls", type.c_str()));
        TACO_ASSIGN_OR_RETURN(int32_t sep, pair_id(j, "sep", type.c_str()));
        return std::unique_ptr<PostProcessor>(new WrapPostProcessor({cls}, {sep}));
    }
    if (type == "Sequence") {
        if (!j.contains("processors") || !j["processors"].is_array()) {
            return error("post_processor Sequence: missing \"processors\" array");
        }
        std::vector<std::unique_ptr<PostProcessor>> parts;
        for (const auto& sub : j["processors"]) {
            TACO_ASSIGN_OR_RETURN(auto part, make_post_processor(sub));
            if (part) parts.push_back(std::move(part));
        }
        return std::unique_ptr<PostProcessor>(new SequencePostProcessor(std::move(parts)));
    }
    return error("unknown post_processor type '{}'", type);
}

}  // namespace taco
