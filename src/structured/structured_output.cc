#include "structured/structured_output.h"

#include <algorithm>

#include <fmt/format.h>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_grammar.h"
#include "structured/regex_compiler.h"

namespace taco::structured {

std::string StructuredOutputSpec::cache_key() const {
    std::string key = fmt::format("{}|{}|{}|", int(kind), int(no_additional_properties),
                                  whitespace_pattern ? "w" + *whitespace_pattern : "-");
    if (kind == StructuredKind::kChoice) {
        for (const std::string& c : choices) key += fmt::format("{}:{}", c.size(), c);
    } else {
        key += text;
    }
    if (sequence)
        key += fmt::format("|seq{}{}:{}{}:{}{}:{}{}",
                           sequence->free_text_without ? fmt::format("f{}:{}", sequence->free_text_without->size(),
                                                                     *sequence->free_text_without)
                                                       : "",
                           sequence->max_items.value_or(-1), sequence->begin.size(), sequence->begin,
                           sequence->separator.size(), sequence->separator, sequence->end.size(), sequence->end);
    return key;
}

Result<Grammar> build_grammar(const StructuredOutputSpec& spec) {
    const JsonSchemaOptions json_options{spec.whitespace_pattern, spec.no_additional_properties};
    switch (spec.kind) {
        case StructuredKind::kJsonSchema: {
            nlohmann::ordered_json schema;
            try {
                schema = nlohmann::ordered_json::parse(spec.text);
            } catch (const std::exception& e) {
                return error("the JSON schema is not valid JSON: {}", e.what());
            }
            if (spec.sequence) return json_sequence_grammar(schema, *spec.sequence, json_options);
            return json_schema_grammar(schema, json_options);
        }
        case StructuredKind::kJsonObject: return json_object_grammar(json_options);
        case StructuredKind::kRegex: {
            GrammarBuilder b;
            const int32_t root = b.add_rule("root");
            auto f = compile_regex(spec.text, b);
            if (!f) return f.status();
            b.set_body(root, *f);
            return b.finish(root);
        }
        case StructuredKind::kChoice: {
            if (spec.choices.empty()) return error("the list of choices is empty");
            GrammarBuilder b;
            const int32_t root = b.add_rule("root");
            std::vector<Fragment> choices;
            for (const std::string& c : spec.choices) choices.push_back(b.literal(c));
            b.set_body(root, b.alt(choices));
            return b.finish(root);
        }
        case StructuredKind::kGrammar: return parse_ebnf(spec.text);
    }
    return error("unknown structured output kind");
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(const StructuredOutputSpec& spec,
                                                                 const std::shared_ptr<const TokenVocab>& vocab) {
    const std::string key = fmt::format("{:016x}|{}", vocab->fingerprint(), spec.cache_key());
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (auto found = index_.find(key); found != index_.end()) {
            lru_.splice(lru_.begin(), lru_, found->second);
            return found->second->second;
        }
    }
    auto grammar = build_grammar(spec);
    if (!grammar) return grammar.status();
    auto compiled = std::make_shared<const CompiledGrammar>(std::move(*grammar), vocab);
    std::lock_guard<std::mutex> lock(mutex_);
    ++num_compiled_;
    if (auto found = index_.find(key); found != index_.end()) return found->second->second;
    lru_.emplace_front(key, compiled);
    index_[key] = lru_.begin();
    size_t mask_bytes = 0;
    for (const Entry& e : lru_) mask_bytes += e.second->mask_bytes();
    while (lru_.size() > capacity_ || (lru_.size() > 1 && mask_bytes > max_mask_bytes_)) {
        mask_bytes -= std::min(mask_bytes, lru_.back().second->mask_bytes());
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
    return std::shared_ptr<const CompiledGrammar>(compiled);
}

size_t GrammarCache::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lru_.size();
}

int64_t GrammarCache::num_compiled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return num_compiled_;
}

}  // namespace taco::structured
