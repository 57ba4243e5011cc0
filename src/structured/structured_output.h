// What a request asks its output to follow (vLLM's structured outputs: json, regex, choice, grammar, json_object),
// built into a Grammar, and the cache of grammars compiled against a vocabulary.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "structured/compiled_grammar.h"
#include "structured/json_schema_grammar.h"

namespace taco::structured {

enum class StructuredKind { kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };

struct StructuredOutputSpec {
    StructuredKind kind = StructuredKind::kJsonObject;
    std::string text;                               // kJsonSchema: the schema's JSON; kRegex: the regex; kGrammar: EBNF
    std::vector<std::string> choices;               // kChoice
    std::optional<std::string> whitespace_pattern;  // JSON kinds: the whitespace between tokens (a regex)
    bool no_additional_properties = false;          // JSON schemas: JsonSchemaOptions::no_additional_properties
    std::optional<JsonSequenceFormat> sequence;     // kJsonSchema: values wrapped as a tagged sequence

    // Names the spec in caches: equal keys build equal grammars.
    std::string cache_key() const;
};

// Errors say what is wrong with the schema, regex or grammar.
Result<Grammar> build_grammar(const StructuredOutputSpec& spec);

// Compiled grammars by (spec, vocabulary), least recently used dropped past `capacity`. Thread-safe; a grammar
// being compiled by one caller may be compiled again by another meanwhile (the first to finish is kept).
class GrammarCache {
public:
    // Past `capacity` grammars, or past `max_mask_bytes` of classified token masks in all (they grow as matchers
    // visit states), the least recently used are dropped (matchers holding one keep it alive).
    explicit GrammarCache(size_t capacity = 256, size_t max_mask_bytes = size_t(1) << 30)
        : capacity_(capacity), max_mask_bytes_(max_mask_bytes) {}

    Result<std::shared_ptr<const CompiledGrammar>> get(const StructuredOutputSpec& spec,
                                                       const std::shared_ptr<const TokenVocab>& vocab);
    size_t size() const;
    int64_t num_compiled() const;  // cache misses that compiled

private:
    using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
    size_t capacity_;
    size_t max_mask_bytes_;
    mutable std::mutex mutex_;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    int64_t num_compiled_ = 0;
};

}  // namespace taco::structured
