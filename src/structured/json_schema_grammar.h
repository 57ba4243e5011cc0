// JSON Schema -> Grammar: the JSON texts the schema accepts (or a subset of them, never a text it rejects).
//
// Covered: type (one or a list), properties / required / additionalProperties (false, absent, true or a schema),
// minProperties / maxProperties (counted over the listed properties; a map, whose keys may repeat, takes
// minProperties of at most 1), enum / const, anyOf / oneOf / allOf, items / prefixItems / minItems / maxItems,
// minLength / maxLength, pattern (ECMAScript regex, unanchored as JSON Schema reads it), format (date, time, date-time,
// uuid, email, ipv4), minimum / maximum / exclusiveMinimum / exclusiveMaximum on integers and numbers (fractional
// bounds exactly: the digits of the end units are compared), $ref into the same document
// ($defs, definitions, any JSON pointer; recursion allowed). Annotations (title, description, default, ...) are
// ignored. Any other keyword is an error naming it, so nothing is silently dropped. minLength / maxLength combine
// with a pattern or a format (GrammarBuilder::json_chars_bounded); a pattern with a format is an error. Numeric and
// length bounds in several allOf branches combine into the tightest.
//
// Where the output is a subset: properties come in the schema's key order and optional ones may be left out
// (with minProperties / maxProperties, as many of them as the counts allow);
// additional properties are generated only for objects without "properties" (a map); numbers with bounds have
// no exponent; a date never falls on February 29. oneOf needs branches that no value can match both (other types,
// a required property with other const / enum values, or a required property the other, closed, branch lacks);
// other oneOfs are errors, since the output could match two branches. Whitespace between tokens follows
// JsonSchemaOptions::whitespace_pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "structured/grammar.h"

namespace taco::structured {

struct JsonSchemaOptions {
    // A regex for the whitespace allowed between JSON tokens (vLLM's guided_whitespace_pattern). The default is
    // outlines' "[ ]?" (one space at most): a model cannot stall in whitespace, and the JSON stays compact.
    std::optional<std::string> whitespace_pattern;
    // vLLM's disable_additional_properties: an object without "additionalProperties" admits none (JSON Schema's
    // default admits any).
    bool no_additional_properties = false;
};

inline constexpr const char* kDefaultJsonWhitespace = "[ ]?";

Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
// JSON values written as a tagged sequence: begin, 1..max_items values of the schema joined by separator, end. A tool
// call parser's output format (hermes: "<tool_call>\n" {call} "\n</tool_call>" ...) around the tools' schemas.
struct JsonSequenceFormat {
    std::string begin, separator, end;
    std::optional<int64_t> max_items;  // absent: unbounded
    // Set: free text in which this tag never occurs comes first, and the values are optional (tool_choice "auto"
    // with a strict tool: the model answers or calls; the tag, hermes' "<tool_call>", starts calls only).
    std::optional<std::string> free_text_without;
};
// begin, then 1..format.max_items values of `schema` joined by format.separator, then end.
Result<Grammar> json_sequence_grammar(const nlohmann::ordered_json& schema, const JsonSequenceFormat& format,
                                      const JsonSchemaOptions& options = {});
// Any JSON object (response_format json_object).
Result<Grammar> json_object_grammar(const JsonSchemaOptions& options = {});

// Regex of the integer literals in [lo, hi] (either bound may be absent): no leading zeros, no "-0".
std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace taco::structured
