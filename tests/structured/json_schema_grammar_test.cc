#include "structured/json_schema_grammar.h"

#include <chrono>
#include <functional>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "json_schema_validator.h"
#include "structured_test_util.h"

namespace taco::structured {
namespace {

using ojson = nlohmann::ordered_json;
using testing::matches;

Grammar schema_grammar(const std::string& schema_text) {
    auto g = json_schema_grammar(ojson::parse(schema_text));
    EXPECT_TRUE(g.is_ok()) << schema_text << ": " << g.status().message();
    return g.is_ok() ? std::move(*g) : Grammar{};
}

TEST(IntegerRangeRegex, MatchesExactlyTheRange) {
    const std::pair<std::optional<int64_t>, std::optional<int64_t>> ranges[] = {
        {0, 100},          {-15, 7},           {13, 13},           {-100, -20},
        {5, std::nullopt}, {std::nullopt, -3}, {std::nullopt, 42}, {99, 1001}};
    for (const auto& [lo, hi] : ranges) {
        auto g = testing::regex_grammar(integer_range_regex(lo, hi));
        ASSERT_TRUE(g.is_ok()) << g.status().message();
        for (int64_t v = -1200; v <= 1200; ++v) {
            const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
            ASSERT_EQ(matches(*g, std::to_string(v)), in)
                << v << " in [" << lo.value_or(-999999) << ", " << hi.value_or(999999)
                << "]: " << integer_range_regex(lo, hi);
        }
        EXPECT_FALSE(matches(*g, "007"));
        EXPECT_FALSE(matches(*g, "-0"));
    }
}

// Ranges whose ends share leading digits (the suite's Unix times in [1700000000, 1800000000], ports in
// [30000, 32767]): the shared digit applies to every alternative after it, so no shorter number slips in.
TEST(IntegerRangeRegex, SharedLeadingDigitsBindEveryAlternative) {
    const std::pair<int64_t, int64_t> ranges[] = {
        {1700000000, 1800000000}, {30000, 32767}, {1050, 1130}, {-1130, -1050}};
    for (const auto& [lo, hi] : ranges) {
        auto g = testing::regex_grammar(integer_range_regex(lo, hi));
        ASSERT_TRUE(g.is_ok()) << g.status().message();
        for (int64_t v : {lo, hi, lo + 1, hi - 1, (lo + hi) / 2}) EXPECT_TRUE(matches(*g, std::to_string(v))) << v;
        for (int64_t v : {lo - 1, hi + 1, lo / 10, hi / 10, lo % 100000000, int64_t(800000000), int64_t(2351)})
            if (v < lo || v > hi)
                EXPECT_FALSE(matches(*g, std::to_string(v))) << v << ": " << integer_range_regex(lo, hi);
    }
}

TEST(JsonSchemaGrammar, ObjectsHonourRequiredOptionalAndAdditionalProperties) {
    const Grammar g = schema_grammar(R"({"type": "object", "properties": {"a": {"type": "integer"},
        "b": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["b"], "additionalProperties": false})");
    EXPECT_TRUE(matches(g, R"({"b":"x"})"));
    EXPECT_TRUE(matches(g, R"({"a": 1, "b": "x", "c": true})"));
    EXPECT_TRUE(matches(g, R"({"b":"x","c":false})"));
    EXPECT_FALSE(matches(g, R"({"a":1})"));             // b is required
    EXPECT_FALSE(matches(g, R"({"b":"x","d":1})"));     // no additional properties
    EXPECT_FALSE(matches(g, R"({"b":1})"));             // wrong type
    EXPECT_FALSE(matches(g, R"({"b":"x",})"));          // trailing comma
    EXPECT_FALSE(matches(g, R"({"b":"x" "c":true})"));  // missing comma
    const Grammar map = schema_grammar(R"({"type": "object", "additionalProperties": {"type": "number"}})");
    EXPECT_TRUE(matches(map, R"({"x": 1.5, "y": -2e3})"));
    EXPECT_TRUE(matches(map, "{}"));
    EXPECT_FALSE(matches(map, R"({"x": "1"})"));
}

// An object of n properties: property i named "p<i>", an integer, required when required(i).
ojson object_of(int n, const std::function<bool(int)>& required) {
    ojson properties = ojson::object(), names = ojson::array();
    for (int i = 0; i < n; ++i) {
        properties["p" + std::to_string(i)] = {{"type", "integer"}};
        if (required(i)) names.push_back("p" + std::to_string(i));
    }
    return {{"type", "object"}, {"properties", properties}, {"required", names}, {"additionalProperties", false}};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Each member's rules name only the next member (pick / next chains): 1,000 optional properties once grew the grammar
// quadratically (5.2 s, then refused at 250k states) and 5,000 took gigabytes until the process was killed.
TEST(JsonSchemaGrammar, ObjectsOfManyOptionalPropertiesGrowLinearly) {
    const auto start = std::chrono::steady_clock::now();
    auto g = json_schema_grammar(object_of(1000, [](int) { return false; }));
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    EXPECT_LT(g->states.size(), 40u * 1000u);
    EXPECT_LT(seconds_since(start), 2.0);
    EXPECT_TRUE(matches(*g, "{}"));
    EXPECT_TRUE(matches(*g, R"({"p3": 1, "p500": 2,"p999":3})"));
    EXPECT_TRUE(matches(*g, R"({"p0":0})"));
    EXPECT_FALSE(matches(*g, R"({"p500": 2, "p3": 1})"));  // out of the schema's order
    EXPECT_FALSE(matches(*g, R"({"p3": 1, "p3": 1})"));    // twice
    EXPECT_FALSE(matches(*g, R"({, "p3": 1})"));
    EXPECT_FALSE(matches(*g, R"({"p1000": 1})"));
}

TEST(JsonSchemaGrammar, ObjectsOfThousandsOfRequiredPropertiesCompileInLinearTime) {
    // The rule analyses of finish() (nullable, productive, left recursion) resolved one member of such a chain per
    // pass over every rule: quadratic in the members.
    const auto start = std::chrono::steady_clock::now();
    auto g = json_schema_grammar(object_of(5000, [](int i) { return i % 100 != 0; }));
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    EXPECT_LT(seconds_since(start), 5.0);
    std::string text = "{";
    for (int i = 0; i < 5000; ++i)
        if (i % 100 != 0 || i == 300) text += (text.size() > 1 ? "," : "") + fmt::format("\"p{}\":{}", i, i);
    EXPECT_TRUE(matches(*g, text + "}"));
    text.erase(text.find(",\"p7\":7"), 7);  // a required member left out
    EXPECT_FALSE(matches(*g, text + "}"));
}

TEST(JsonSchemaGrammar, LongRunsOfOptionalPropertiesAreRefusedNamingTheirSize) {
    auto g = json_schema_grammar(object_of(5000, [](int) { return false; }));
    ASSERT_FALSE(g.is_ok());
    EXPECT_NE(g.status().message().find("5000 properties, 5000 of them optional in a row; at most 1024"),
              std::string::npos)
        << g.status().message();
    // Runs within the bound, however many in all, are fine.
    EXPECT_TRUE(json_schema_grammar(object_of(5000, [](int i) { return i % 1000 == 999; })).is_ok());
}

TEST(JsonSchemaGrammar, ArraysHonourPrefixItemsAndCounts) {
    const Grammar g = schema_grammar(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}],
        "items": {"type": "integer"}, "minItems": 1, "maxItems": 4})");
    EXPECT_TRUE(matches(g, R"(["a"])"));
    EXPECT_TRUE(matches(g, R"(["a", null, 1, 2])"));
    EXPECT_FALSE(matches(g, "[]"));
    EXPECT_FALSE(matches(g, R"(["a", null, 1, 2, 3])"));
    EXPECT_FALSE(matches(g, R"([1])"));
    const Grammar counted =
        schema_grammar(R"({"type": "array", "items": {"enum": [1, 2]}, "minItems": 2, "maxItems": 3})");
    EXPECT_FALSE(matches(counted, "[1]"));
    EXPECT_TRUE(matches(counted, "[1,2]"));
    EXPECT_TRUE(matches(counted, "[1, 2, 1]"));
    EXPECT_FALSE(matches(counted, "[1,2,1,2]"));
}

TEST(JsonSchemaGrammar, ObjectsHonourMinAndMaxProperties) {
    // Listed properties: the members written are counted, whichever of the optional ones they are.
    const Grammar two = schema_grammar(R"({"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2},
        "c": {"const": 3}, "d": {"const": 4}}, "required": ["b"], "minProperties": 2, "maxProperties": 3})");
    EXPECT_FALSE(matches(two, R"({"b":2})"));
    EXPECT_TRUE(matches(two, R"({"a":1,"b":2})"));
    EXPECT_TRUE(matches(two, R"({"b":2,"d":4})"));
    EXPECT_TRUE(matches(two, R"({"a":1, "b":2, "c":3})"));
    EXPECT_TRUE(matches(two, R"({"b":2,"c":3,"d":4})"));
    EXPECT_FALSE(matches(two, R"({"a":1,"b":2,"c":3,"d":4})"));
    EXPECT_FALSE(matches(two, R"({"a":1,"c":3})"));  // b is still required
    // Only a minimum: every count past it is alike.
    const Grammar at_least = schema_grammar(R"({"type": "object", "properties": {"a": {"const": 1},
        "b": {"const": 2}, "c": {"const": 3}}, "minProperties": 1})");
    EXPECT_FALSE(matches(at_least, "{}"));
    EXPECT_TRUE(matches(at_least, R"({"c":3})"));
    EXPECT_TRUE(matches(at_least, R"({"a":1,"b":2,"c":3})"));
    // A free-form map: a maximum, and a minimum of one (keys may repeat, so no more than one is promised).
    const Grammar map = schema_grammar(R"({"type": "object", "additionalProperties": {"type": "integer"},
        "minProperties": 1, "maxProperties": 2})");
    EXPECT_FALSE(matches(map, "{}"));
    EXPECT_TRUE(matches(map, R"({"x":1})"));
    EXPECT_TRUE(matches(map, R"({"x":1,"y":2})"));
    EXPECT_FALSE(matches(map, R"({"x":1,"y":2,"z":3})"));
    EXPECT_TRUE(matches(schema_grammar(R"({"type": "object", "maxProperties": 0})"), "{}"));
    EXPECT_FALSE(matches(schema_grammar(R"({"type": "object", "maxProperties": 0})"), R"({"a":1})"));
    // allOf takes the tighter bound of each side.
    const Grammar merged = schema_grammar(R"({"allOf": [{"type": "object", "properties": {"a": {"const": 1},
        "b": {"const": 2}, "c": {"const": 3}}, "maxProperties": 3}, {"maxProperties": 1}]})");
    EXPECT_TRUE(matches(merged, R"({"b":2})"));
    EXPECT_FALSE(matches(merged, R"({"a":1,"b":2})"));
    // Counts no object can meet are errors naming them.
    const std::pair<const char*, const char*> refused[] = {
        {R"({"type": "object", "minProperties": 3, "maxProperties": 2})", "minProperties and maxProperties"},
        {R"({"type": "object", "properties": {"a": {}}, "minProperties": 2})", "minProperties 2 is more than"},
        {R"({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"], "maxProperties": 1})",
         "maxProperties 1 is less than the 2 required"},
        {R"({"type": "object", "additionalProperties": false, "minProperties": 1})", "minProperties"},
        {R"({"type": "object", "minProperties": 2})", "minProperties above 1"},
        {R"({"type": "object", "minProperties": -1})", "'minProperties' must be a non-negative integer"},
    };
    for (const auto& [schema, what] : refused) {
        auto g = json_schema_grammar(ojson::parse(schema));
        ASSERT_FALSE(g.is_ok()) << schema;
        EXPECT_NE(g.status().message().find(what), std::string::npos) << schema << ": " << g.status().message();
    }
}

TEST(JsonSchemaGrammar, StringsHonourLengthPatternAndFormats) {
    const Grammar len = schema_grammar(R"({"type": "string", "minLength": 2, "maxLength": 3})");
    EXPECT_FALSE(matches(len, R"("a")"));
    EXPECT_TRUE(matches(len, R"("ab")"));
    EXPECT_TRUE(matches(len, "\"\xC3\xA9\\n\""));  // é and an escape: two characters
    EXPECT_FALSE(matches(len, R"("abcd")"));
    const Grammar pattern = schema_grammar(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+$"})");
    EXPECT_TRUE(matches(pattern, R"("AB-12")"));
    EXPECT_FALSE(matches(pattern, R"("AB-")"));
    const Grammar date = schema_grammar(R"({"type": "string", "format": "date"})");
    EXPECT_TRUE(matches(date, R"("2024-12-31")"));
    EXPECT_FALSE(matches(date, R"("2024-02-30")"));
    EXPECT_FALSE(matches(date, R"("2024-13-01")"));
    const Grammar ip = schema_grammar(R"({"type": "string", "format": "ipv4"})");
    EXPECT_TRUE(matches(ip, R"("192.168.0.255")"));
    EXPECT_FALSE(matches(ip, R"("256.1.1.1")"));
    const Grammar uuid = schema_grammar(R"({"type": "string", "format": "uuid"})");
    EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
}

// A pattern or format with minLength / maxLength (the schema suite's "username", "sku"): both hold, characters counted
// as code points with an escape as one.
TEST(JsonSchemaGrammar, StringsHonourLengthTogetherWithPatternOrFormat) {
    const Grammar user = schema_grammar(R"({"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"})");
    EXPECT_FALSE(matches(user, R"("ab")"));
    EXPECT_TRUE(matches(user, R"("abc")"));
    EXPECT_TRUE(matches(user, R"("abcde")"));
    EXPECT_FALSE(matches(user, R"("abcdef")"));
    EXPECT_FALSE(matches(user, R"("abC")"));
    const Grammar any = schema_grammar(R"({"type": "string", "maxLength": 2, "pattern": "x"})");  // unanchored
    EXPECT_TRUE(matches(any, R"("x")"));
    EXPECT_TRUE(matches(any, "\"\xC3\xA9x\""));  // é then x: two characters
    EXPECT_TRUE(matches(any, R"("\nx")"));       // an escape is one character
    EXPECT_TRUE(matches(any, R"("x\u001f")"));   // a control character, written as its escape
    EXPECT_FALSE(matches(any, R"("xyz")"));
    EXPECT_FALSE(matches(any, R"("ab")"));
    const Grammar exact =
        schema_grammar(R"({"type": "string", "minLength": 4, "maxLength": 4, "pattern": "^[0-9]+$"})");
    EXPECT_TRUE(matches(exact, R"("1234")"));
    EXPECT_FALSE(matches(exact, R"("123")"));
    const Grammar date = schema_grammar(R"({"type": "string", "format": "date", "maxLength": 10})");
    EXPECT_TRUE(matches(date, R"("2024-12-31")"));
    // Bounds the format cannot meet leave no string at all: an error, not a grammar that stalls.
    EXPECT_FALSE(json_schema_grammar(ojson::parse(R"({"type": "string", "format": "uuid", "maxLength": 10})")).is_ok());
    auto both = json_schema_grammar(ojson::parse(R"({"type": "string", "format": "date", "pattern": "^2"})"));
    ASSERT_FALSE(both.is_ok());
    EXPECT_NE(both.status().message().find("'pattern' and 'format'"), std::string::npos) << both.status().message();
}

TEST(JsonSchemaGrammar, NumbersHonourBounds) {
    const Grammar g = schema_grammar(R"({"type": "number", "minimum": -1.5, "exclusiveMaximum": 3})");
    for (const char* in : {"-1", "-0.25", "0", "2.999", "2"}) EXPECT_TRUE(matches(g, in)) << in;
    EXPECT_TRUE(matches(g, "-1.5"));  // fractional bounds are exact (NumbersWithFractionalBoundsAreExact)
    for (const char* out : {"-2", "3", "3.5", "-1.6", "10"}) EXPECT_FALSE(matches(g, out)) << out;
    const Grammar i = schema_grammar(R"({"type": "integer", "exclusiveMinimum": 0, "maximum": 10})");
    EXPECT_FALSE(matches(i, "0"));
    EXPECT_TRUE(matches(i, "1"));
    EXPECT_TRUE(matches(i, "10"));
    EXPECT_FALSE(matches(i, "11"));
    EXPECT_FALSE(matches(i, "1.5"));
}

// Fractional bounds (the suite's rms_norm_eps in (0, 0.001], a pinned 2.5) hold exactly: every decimal with up to
// three places in [-3, 3] is matched exactly when it lies within the bounds ("-0.x" spellings of zero aside).
TEST(JsonSchemaGrammar, NumbersWithFractionalBoundsAreExact) {
    struct Bounds {
        const char* schema;
        double lo, hi;
        bool lo_excl, hi_excl;
    };
    const Bounds cases[] = {
        {R"({"type": "number", "exclusiveMinimum": 0, "maximum": 0.001})", 0, 0.001, true, false},
        {R"({"type": "number", "minimum": 2.5, "maximum": 2.5})", 2.5, 2.5, false, false},
        {R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})", 0, 1, true, true},
        {R"({"type": "number", "minimum": -1.5, "maximum": -0.25})", -1.5, -0.25, false, false},
        {R"({"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 1})", -1, 1, true, true},
        {R"({"type": "number", "minimum": -2.125, "exclusiveMaximum": 1.75})", -2.125, 1.75, false, true},
        {R"({"type": "number", "exclusiveMinimum": 0.05, "maximum": 0.3})", 0.05, 0.3, true, false},
        {R"({"allOf": [{"type": "number", "minimum": -5, "maximum": 5}, {"minimum": 0.5, "exclusiveMaximum": 2}]})",
         0.5, 2, false, true},
    };
    for (const Bounds& b : cases) {
        auto compiled = std::make_shared<const CompiledGrammar>(schema_grammar(b.schema), testing::byte_vocab(), false);
        auto matches = [&](const std::string& text) {
            GrammarMatcher m(compiled, {});
            return m.accept_bytes(text) && m.can_finish();
        };
        for (int v = -3000; v <= 3000; ++v) {
            const double x = v / 1000.0;
            const bool in = (b.lo_excl ? x > b.lo : x >= b.lo) && (b.hi_excl ? x < b.hi : x <= b.hi);
            for (const std::string& text : {fmt::format("{:.3f}", x), fmt::format("{:.1f}", x), fmt::format("{}", x)}) {
                if (text.rfind("-0", 0) == 0 && std::stod(text) == 0) continue;
                if (std::stod(text) != x) continue;  // rounded by the format
                EXPECT_EQ(matches(text), in) << b.schema << " " << text;
            }
        }
    }
}

TEST(JsonSchemaGrammar, OneOfWithDisjointBranchesIsAccepted) {
    for (const char* schema : {
             R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})",
             R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                 "required": ["kind"]}, {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}},
                 "required": ["kind"]}]})",
             R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                 "additionalProperties": false}, {"type": "object", "properties": {"b": {"type": "integer"}},
                 "required": ["b"], "additionalProperties": false}]})",
             R"({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0.5, "maximum": 0.75}]})",
         }) {
        auto g = json_schema_grammar(ojson::parse(schema));
        EXPECT_EQ(g.is_ok(), std::string(schema).find("0.5") == std::string::npos) << schema;
    }
}

TEST(JsonSchemaGrammar, RefsAndRecursion) {
    const Grammar g = schema_grammar(R"({"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/node"})");
    EXPECT_TRUE(matches(g, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
    EXPECT_FALSE(matches(g, R"({"v":1,"kids":[{"kids":[]}]})"));
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreErrorsNamingThem) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"type": "integer", "multipleOf": 3})", "'multipleOf'"},
        {R"({"type": "object", "patternProperties": {"a": {}}})", "'patternProperties'"},
        {R"({"type": "string", "format": "hostname"})", "'hostname'"},
        {R"({"type": "array", "uniqueItems": true})", "'uniqueItems'"},
        {R"({"$ref": "http://example.com/s.json"})", "'$ref'"},
        {R"({"$ref": "#/$defs/missing"})", "points at nothing"},
        {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no number"},
        {R"({"type": "object", "properties": {"a": {"type": "wat"}}})", "unknown type 'wat'"},
        {R"({"type": "string", "pattern": "(a)\\1"})", "backreferences"},
        {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", "do not intersect"},
        {R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})", "oneOf branches 0 and 1"},
        {R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
            {"type": "object", "properties": {"b": {"type": "integer"}}}]})",
         "oneOf branches 0 and 1"},
        {R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}},
            "required": ["b"]}]})",
         "'b' is excluded"},
    };
    for (const auto& [schema, what] : cases) {
        auto g = json_schema_grammar(ojson::parse(schema));
        ASSERT_FALSE(g.is_ok()) << schema;
        EXPECT_NE(g.status().message().find(what), std::string::npos) << schema << ": " << g.status().message();
    }
}

// Every text sampled under the masks parses as JSON and validates against its schema.
TEST(JsonSchemaGrammar, RandomWalksUnderTheMaskValidate) {
    const char* schemas[] = {
        R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer",
            "minimum": 0, "maximum": 150}, "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}},
            "required": ["name", "age"], "additionalProperties": false})",
        R"({"anyOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number",
            "exclusiveMinimum": 0}}, "required": ["kind", "r"], "additionalProperties": false},
            {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "integer"}},
            "required": ["kind", "side"], "additionalProperties": false}]})",
        R"({"$defs": {"t": {"type": "object", "properties": {"v": {"type": ["integer", "null"]}, "c": {"type": "array",
            "items": {"$ref": "#/$defs/t"}, "maxItems": 2}}, "required": ["v"], "additionalProperties": false}},
            "$ref": "#/$defs/t"})",
        R"({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}, "id": {"type": "string",
            "format": "uuid"}, "mail": {"type": "string", "format": "email"}, "ip": {"type": "string", "format": "ipv4"},
            "day": {"type": "string", "format": "date"}}, "required": ["when", "id", "mail", "ip", "day"],
            "additionalProperties": false})",
        R"({"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "string", "pattern": "^x[0-9]{2}$"}],
            "items": {"type": "number", "minimum": -2.5, "maximum": 7}, "minItems": 2, "maxItems": 5})",
        R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string", "minLength": 1}}, "required": ["b"]}]})",
        R"({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}})",
        R"({"type": "string", "pattern": "ab|cd"})",
        R"({"oneOf": [{"type": "object", "properties": {"t": {"const": 1}, "v": {"type": "string", "maxLength": 3}},
            "required": ["t"]}, {"type": "object", "properties": {"t": {"const": 2}}, "required": ["t"]},
            {"type": ["integer", "null"]}]})",
    };
    auto vocab = testing::json_vocab();
    std::mt19937 rng(1234);
    for (const char* text : schemas) {
        const ojson schema = ojson::parse(text);
        auto g = json_schema_grammar(schema);
        ASSERT_TRUE(g.is_ok()) << text << ": " << g.status().message();
        auto compiled = std::make_shared<const CompiledGrammar>(std::move(*g), vocab);
        int finished = 0;
        for (int walk = 0; walk < 60; ++walk) {
            auto out = testing::random_walk(compiled, rng);
            if (!out) continue;
            ++finished;
            ojson value;
            ASSERT_NO_THROW(value = ojson::parse(*out)) << *out;
            EXPECT_EQ(testing::validate_json(value, schema, schema), "") << text << "\n" << *out;
        }
        EXPECT_GT(finished, 20) << text;
    }
}

}  // namespace
}  // namespace taco::structured

namespace taco::structured::testing {
namespace {

// A tool call parser's format around a schema: hermes' tags, one to max_items calls.
TEST(JsonSequenceGrammar, WrapsSchemaValuesInTagsAndSeparators) {
    const auto schema = nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"name": {"const": "f"}, "arguments": {"type": "object",
            "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}},
            "required": ["name", "arguments"], "additionalProperties": false})");
    const JsonSequenceFormat hermes{"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}};
    auto g = json_sequence_grammar(schema, hermes);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    const std::string call = R"({"name": "f", "arguments": {"n": 1}})";
    EXPECT_TRUE(matches(*g, "<tool_call>\n" + call + "\n</tool_call>"));
    EXPECT_TRUE(matches(*g, "<tool_call>\n" + call + "\n</tool_call>\n<tool_call>\n" + call + "\n</tool_call>"));
    EXPECT_FALSE(matches(*g, call));
    EXPECT_FALSE(matches(*g, "<tool_call>\n" + call));
    EXPECT_FALSE(matches(*g, R"(<tool_call>
{"name": "g", "arguments": {"n": 1}}
</tool_call>)"));
    EXPECT_FALSE(matches(*g, R"(<tool_call>
{"name": "f", "arguments": {"n": "1"}}
</tool_call>)"));
    JsonSequenceFormat one = hermes;
    one.max_items = 1;
    auto single = json_sequence_grammar(schema, one);
    ASSERT_TRUE(single.is_ok()) << single.status().message();
    EXPECT_TRUE(matches(*single, "<tool_call>\n" + call + "\n</tool_call>"));
    EXPECT_FALSE(matches(*single, "<tool_call>\n" + call + "\n</tool_call>\n<tool_call>\n" + call + "\n</tool_call>"));
    one.max_items = 0;
    EXPECT_FALSE(json_sequence_grammar(schema, one).is_ok());
}

}  // namespace
}  // namespace taco::structured::testing

namespace taco::structured::testing {
namespace {

// tool_choice "auto" with a strict tool: any text without the tag, then optionally calls valid for the schema.
TEST(JsonSequenceGrammar, FreeTextFirstExcludesTheTagAndCallsFollowTheSchema) {
    const auto schema = nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"name": {"const": "f"}, "arguments": {"type": "object",
            "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}},
            "required": ["name", "arguments"], "additionalProperties": false})");
    JsonSequenceFormat format{"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}};
    format.free_text_without = "<tool_call>";
    auto g = json_sequence_grammar(schema, format);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 1}}\n</tool_call>";
    EXPECT_TRUE(matches(*g, ""));
    EXPECT_TRUE(matches(*g, "Plain answer, with <tags> and <tool_ and < signs. Zürich ✓"));
    EXPECT_TRUE(matches(*g, "ends with a partial <tool_ca"));
    EXPECT_TRUE(matches(*g, "Let me look: <<tool_" + call));
    EXPECT_TRUE(matches(*g, call));
    EXPECT_TRUE(matches(*g, "x" + call + "\n" + call));
    // The tag starts a call only, and a call must follow the schema.
    EXPECT_FALSE(matches(*g, "text <tool_call>{\"name\": \"g\"} more"));
    EXPECT_FALSE(matches(*g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": \"x\"}}\n</tool_call>"));
    EXPECT_FALSE(matches(*g, call + " trailing text"));
    EXPECT_FALSE(matches(*g, "bad utf-8 \xff"));
}

}  // namespace
}  // namespace taco::structured::testing
