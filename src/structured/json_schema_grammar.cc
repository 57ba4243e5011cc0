#include "structured/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_util.h"
#include "structured/regex_compiler.h"

namespace taco::structured {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kMaxSchemaDepth = 128;      // nesting of schemas inside schemas (recursion through $ref is a call)
constexpr double kMaxNumberBound = 1e15;  // bounds stay exact in int64 and double
// An object's optional properties in a row (each is a parse the matcher follows while a key is written).
constexpr size_t kMaxOptionalPropertiesInARow = 1024;
// The (member, count) states of an object with minProperties / maxProperties: (properties + 1) x (count bound + 1).
constexpr int64_t kMaxCountedPropertyStates = 100'000;

// The raw JSON text of one string character: anything but '"', '\' and controls, or an escape (no lone surrogate).
constexpr const char* kJsonChar =
    "[^\"\\\\\\x00-\\x1f]|\\\\([\"\\\\/bfnrt]|u([0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))";
constexpr const char* kNumber = "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";

const std::map<std::string, std::string>& formats() {
    static const std::map<std::string, std::string> kFormats = [] {
        const std::string date =
            "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2["
            "0-8]))";
        const std::string time =
            "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
        const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
        return std::map<std::string, std::string>{
            {"date", date},
            {"time", time},
            {"date-time", date + "T" + time},
            {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
            // Every part bounded (RFC 5321 allows 64 characters before the '@'), so a model cannot stall in one.
            {"email",
             "[a-zA-Z0-9_+-]{1,32}(\\.[a-zA-Z0-9_+-]{1,32}){0,2}@([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.){1,3}"
             "[a-zA-Z]{2,24}"},
            {"ipv4", octet + "(\\." + octet + "){3}"},
        };
    }();
    return kFormats;
}

// The digits after the point of |x| (shortest round trip): 2.675 -> "675", 1e-05 -> "00001", 3 -> "".
std::string fraction_digits(double x) {
    const std::string text = fmt::format("{}", std::abs(x));
    std::string mantissa = text;
    int exponent = 0;
    if (const size_t e = text.find('e'); e != std::string::npos) {
        mantissa = text.substr(0, e);
        exponent = std::stoi(text.substr(e + 1));
    }
    const size_t point = mantissa.find('.');
    std::string digits = mantissa, fraction;
    int int_digits = int(mantissa.size());
    if (point != std::string::npos) {
        digits = mantissa.substr(0, point) + mantissa.substr(point + 1);
        int_digits = int(point);
    }
    int_digits += exponent;
    if (int_digits < 0) {
        fraction = std::string(size_t(-int_digits), '0') + digits;
    } else if (size_t(int_digits) < digits.size()) {
        fraction = digits.substr(size_t(int_digits));
    }
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
    return fraction;
}

bool all_zeros(std::string_view digits) { return digits.find_first_not_of('0') == std::string_view::npos; }

std::string digit_class(char from, char to) {
    return from == to ? std::string(1, from) : fmt::format("[{}-{}]", from, to);
}

// Regexes of digit strings F (at least one digit when `need_digit`) by the value of 0.F against 0.S (S: digits):
// at least (more than, `strict`) 0.S; at most (less than) 0.S; between 0.A and 0.B. nullopt: no string.
std::optional<std::string> fraction_at_least(std::string_view s, bool strict, bool need_digit) {
    if (all_zeros(s)) return strict ? "[0-9]*[1-9][0-9]*" : need_digit ? "[0-9]+" : "[0-9]*";
    std::string out = "(";
    const auto rest = fraction_at_least(s.substr(1), strict, false);
    if (rest) out += fmt::format("{}({})", s[0], *rest);
    if (s[0] < '9') out += fmt::format("{}{}[0-9]*", rest ? "|" : "", digit_class(char(s[0] + 1), '9'));
    if (out == "(") return std::nullopt;
    return out + ")";
}

std::optional<std::string> fraction_at_most(std::string_view s, bool strict, bool need_digit) {
    if (all_zeros(s)) {
        if (strict) return std::nullopt;
        return need_digit ? "0+" : "0*";
    }
    std::vector<std::string> alts;
    if (auto rest = fraction_at_most(s.substr(1), strict, false)) alts.push_back(fmt::format("{}({})", s[0], *rest));
    if (s[0] > '0') alts.push_back(digit_class('0', char(s[0] - 1)) + "[0-9]*");
    if (!need_digit) alts.push_back("");
    if (alts.empty()) return std::nullopt;
    return "(" + fmt::format("{}", fmt::join(alts, "|")) + ")";
}

std::optional<std::string> fraction_between(std::string a, std::string b, bool a_strict, bool b_strict,
                                            bool need_digit) {
    if (all_zeros(a) && !a_strict) return fraction_at_most(b, b_strict, need_digit);
    const size_t n = std::max(a.size(), b.size());
    a.resize(n, '0');
    b.resize(n, '0');
    if (n == 0) return std::nullopt;  // 0.A = 0.B = 0, and A is strict
    if (a[0] == b[0]) {
        auto rest = fraction_between(a.substr(1), b.substr(1), a_strict, b_strict, false);
        if (!rest) return std::nullopt;
        return fmt::format("{}({})", a[0], *rest);
    }
    std::vector<std::string> alts;
    if (auto low = fraction_at_least(std::string_view(a).substr(1), a_strict, false))
        alts.push_back(fmt::format("{}({})", a[0], *low));
    if (b[0] - a[0] > 1) alts.push_back(digit_class(char(a[0] + 1), char(b[0] - 1)) + "[0-9]*");
    if (auto high = fraction_at_most(std::string_view(b).substr(1), b_strict, false))
        alts.push_back(fmt::format("{}({})", b[0], *high));
    if (alts.empty()) return std::nullopt;
    return "(" + fmt::format("{}", fmt::join(alts, "|")) + ")";
}

// Appends to `parts` the regexes of the numbers sign I.F (a point and digits) whose magnitude lies between lo and hi
// (>= 0; strict where said; hi absent: unbounded), exactly: the unit intervals at the ends compare the digits.
void fraction_numbers(const char* sign, double lo, bool lo_strict, std::optional<double> hi, bool hi_strict,
                      std::vector<std::string>& parts) {
    if (hi && (*hi < lo || (*hi == lo && (lo_strict || hi_strict)))) return;
    const int64_t i_lo = int64_t(std::floor(lo));
    const std::optional<int64_t> i_hi = hi ? std::optional<int64_t>(int64_t(std::floor(*hi))) : std::nullopt;
    if (i_hi && *i_hi < i_lo) return;
    const std::string f_lo = fraction_digits(lo), f_hi = hi ? fraction_digits(*hi) : "";
    const auto first = i_hi && *i_hi == i_lo ? fraction_between(f_lo, f_hi, lo_strict, hi_strict, true)
                                             : fraction_at_least(f_lo, lo_strict, true);
    if (first) parts.push_back(fmt::format("{}{}\\.{}", sign, i_lo, *first));
    if (!i_hi || *i_hi - 1 >= i_lo + 1)
        parts.push_back(
            fmt::format("{}({})\\.[0-9]+", sign,
                        integer_range_regex(i_lo + 1, i_hi ? std::optional<int64_t>(*i_hi - 1) : std::nullopt)));
    if (i_hi && *i_hi > i_lo)
        if (auto last = fraction_at_most(f_hi, hi_strict, true))
            parts.push_back(fmt::format("{}{}\\.{}", sign, *i_hi, *last));
}

// Numeric keywords of which two values in allOf branches combine into the tighter one.
const std::set<std::string>& lower_bounds() {
    static const std::set<std::string> kLower = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                                 "minProperties"};
    return kLower;
}
const std::set<std::string>& upper_bounds() {
    static const std::set<std::string> kUpper = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                                 "maxProperties"};
    return kUpper;
}

const std::set<std::string>& annotations() {
    static const std::set<std::string> kAnnotations = {"title",    "description", "$schema",  "$id",
                                                       "$comment", "default",     "examples", "deprecated",
                                                       "readOnly", "writeOnly",   "$defs",    "definitions"};
    return kAnnotations;
}

const std::set<std::string>& supported_keywords() {
    static const std::set<std::string> kKeywords = {"type",
                                                    "properties",
                                                    "required",
                                                    "additionalProperties",
                                                    "enum",
                                                    "const",
                                                    "anyOf",
                                                    "oneOf",
                                                    "allOf",
                                                    "items",
                                                    "prefixItems",
                                                    "minItems",
                                                    "maxItems",
                                                    "minProperties",
                                                    "maxProperties",
                                                    "minLength",
                                                    "maxLength",
                                                    "pattern",
                                                    "format",
                                                    "minimum",
                                                    "maximum",
                                                    "exclusiveMinimum",
                                                    "exclusiveMaximum",
                                                    "$ref",
                                                    "uniqueItems"};
    return kKeywords;
}

class SchemaCompiler {
public:
    SchemaCompiler(const ojson& root, const JsonSchemaOptions& options) : root_(root), options_(options) {}

    Result<Grammar> compile_schema() {
        const int32_t root = b_.add_rule("root");
        auto body = schema_fragment(root_, "#", 0);
        if (!body) return body.status();
        b_.set_body(root, *body);
        return b_.finish(root);
    }

    Result<Grammar> compile_sequence(const JsonSequenceFormat& format) {
        if (format.max_items && *format.max_items < 1) return error("a JSON sequence needs at least one item");
        const int32_t root = b_.add_rule("root");
        const int32_t item = b_.add_rule("item");
        auto body = schema_fragment(root_, "#", 0);
        if (!body) return body.status();
        b_.set_body(item, *body);
        Fragment out = b_.seq(b_.tag_literal(format.begin), b_.call(item));
        if (format.max_items != 1) {
            auto more = b_.repeat(b_.seq(b_.tag_literal(format.separator), b_.call(item)), 0,
                                  format.max_items ? std::optional<int64_t>(*format.max_items - 1) : std::nullopt);
            if (!more) return more.status();
            out = b_.seq(out, *more);
        }
        out = b_.seq(out, b_.tag_literal(format.end));
        if (format.free_text_without) {
            const std::string& tag = *format.free_text_without;
            if (tag.empty() || format.begin.rfind(tag, 0) != 0)
                return error("the free text of a JSON sequence must exclude a tag its begin starts with");
            for (char c : tag)
                if (uint8_t(c) >= 0x80) return error("the tag after a JSON sequence's free text must be ASCII");
            Status bad = Status::ok();
            const Fragment text = b_.text_without(tag, [&] {
                auto f = compile_regex("[^\\x00-\\x7F]", b_);
                if (!f) bad = f.status();
                return f ? *f : b_.empty();
            });
            if (!bad) return bad;
            out = b_.seq(text, b_.optional(out));
        }
        b_.set_body(root, out);
        return b_.finish(root);
    }

    Result<Grammar> compile_any_object() {
        const int32_t root = b_.add_rule("root");
        auto object = any_rule("object");
        if (!object) return object.status();
        b_.set_body(root, b_.call(*object));
        return b_.finish(root);
    }

private:
    Status fail(const std::string& path, const std::string& what) const {
        return error("JSON schema at {}: {}", path, what);
    }

    Result<int32_t> regex_rule(const std::string& name, const std::string& pattern, RegexOptions options = {}) {
        if (auto found = b_.find_rule(name)) return *found;
        auto f = compile_regex(pattern, b_, options);
        if (!f) return f.status();
        const int32_t rule = b_.add_rule(name);
        b_.set_body(rule, *f);
        return rule;
    }

    // Inline, not a rule: a token such as ' "' then stays inside the rule that writes the separator, so its class
    // is known without the stack (a called whitespace rule would end inside most tokens that start with a space).
    Result<Fragment> ws() {
        auto f = compile_regex(options_.whitespace_pattern.value_or(kDefaultJsonWhitespace), b_);
        if (!f) return error("guided_whitespace_pattern: {}", f.status().message());
        return *f;
    }

    // seq of pieces with whitespace between them.
    Result<Fragment> spaced(std::vector<Fragment> pieces) {
        Fragment out = pieces[0];
        for (size_t i = 1; i < pieces.size(); ++i) {
            auto w = ws();
            if (!w) return w.status();
            out = b_.seq(b_.seq(out, *w), pieces[i]);
        }
        return out;
    }

    // The generic rules: value, object, array, string, number (any JSON of that kind).
    Result<int32_t> any_rule(const std::string& kind) {
        const std::string name = "any_" + kind;
        if (auto found = b_.find_rule(name)) return *found;
        const int32_t rule = b_.add_rule(name);
        Result<Fragment> body = error("unknown kind");
        if (kind == "string") {
            auto chars = compile_regex(fmt::format("({})*", kJsonChar), b_);
            if (!chars) return chars.status();
            body = b_.seq(b_.seq(b_.literal("\""), *chars), b_.literal("\""));
        } else if (kind == "number") {
            body = compile_regex(kNumber, b_);
        } else if (kind == "value") {
            std::vector<Fragment> choices;
            for (const char* k : {"object", "array", "string", "number"}) {
                auto r = any_rule(k);
                if (!r) return r.status();
                choices.push_back(b_.call(*r));
            }
            for (const char* lit : {"true", "false", "null"}) choices.push_back(b_.literal(lit));
            body = b_.alt(choices);
        } else if (kind == "object") {
            auto value = any_rule("value");
            auto key = any_rule("string");
            if (!value) return value.status();
            if (!key) return key.status();
            body = map_fragment(*key, *value);
        } else if (kind == "array") {
            auto value = any_rule("value");
            if (!value) return value.status();
            body = list_fragment({}, *value, 0, std::nullopt);
        }
        if (!body) return body.status();
        b_.set_body(rule, *body);
        return rule;
    }

    // "{" (key ":" value ("," key ":" value)*)? "}", min_members..max_members members (max absent: any number).
    Result<Fragment> map_fragment(int32_t key_rule, int32_t value_rule, int64_t min_members = 0,
                                  std::optional<int64_t> max_members = std::nullopt) {
        auto first = spaced({b_.call(key_rule), b_.literal(":"), b_.call(value_rule)});
        auto next = spaced({b_.call(key_rule), b_.literal(":"), b_.call(value_rule)});
        auto w0 = ws(), w1 = ws(), w2 = ws(), w3 = ws();
        for (const auto* r : {&first, &next, &w0, &w1, &w2, &w3})
            if (!*r) return r->status();
        const Fragment open = b_.seq(b_.literal("{"), *w0), close = b_.seq(*w3, b_.literal("}"));
        if (max_members && *max_members == 0) return b_.seq(open, close);
        const Fragment more = b_.seq(b_.seq(b_.seq(*w1, b_.literal(",")), *w2), *next);
        std::optional<int64_t> more_max;
        if (max_members) more_max = *max_members - 1;
        auto tail = b_.repeat(more, std::max<int64_t>(0, min_members - 1), more_max);
        if (!tail) return tail.status();
        const Fragment inner = b_.seq(*first, *tail);
        return b_.seq(b_.seq(open, min_members > 0 ? inner : b_.optional(inner)), close);
    }

    // "[" elements "]" with prefix[i] for element i < prefix.size(), then `item` (item < 0: none), count in
    // [min_items, max_items].
    Result<Fragment> list_fragment(const std::vector<int32_t>& prefix, int32_t item, int64_t min_items,
                                   std::optional<int64_t> max_items) {
        const int64_t p = int64_t(prefix.size());
        if (item < 0) max_items = max_items ? std::min(*max_items, p) : p;
        if (max_items && *max_items < min_items) return error("no array length satisfies minItems and maxItems");
        auto sep = [&]() -> Result<Fragment> {
            auto w1 = ws(), w2 = ws();
            if (!w1) return w1.status();
            if (!w2) return w2.status();
            return b_.seq(b_.seq(*w1, b_.literal(",")), *w2);
        };
        // tail(i): the elements from i on, with i already written (element i > 0 starts with a separator).
        std::function<Result<Fragment>(int64_t)> tail = [&](int64_t i) -> Result<Fragment> {
            if (max_items && i >= *max_items) return b_.empty();
            if (i >= p) {
                if (item < 0) return b_.empty();
                const int64_t rmin = std::max<int64_t>(0, min_items - i);
                std::optional<int64_t> rmax;
                if (max_items) rmax = *max_items - i;
                if (i == 0) {  // the first item has no separator
                    auto s = sep();
                    if (!s) return s.status();
                    std::optional<int64_t> more_max;
                    if (rmax) more_max = *rmax - 1;
                    auto more = b_.repeat(b_.seq(*s, b_.call(item)), std::max<int64_t>(0, rmin - 1), more_max);
                    if (!more) return more.status();
                    Fragment f = b_.seq(b_.call(item), *more);
                    return rmin == 0 ? b_.optional(f) : f;
                }
                auto s = sep();
                if (!s) return s.status();
                return b_.repeat(b_.seq(*s, b_.call(item)), rmin, rmax);
            }
            Fragment f = b_.call(prefix[size_t(i)]);
            if (i > 0) {
                auto s = sep();
                if (!s) return s.status();
                f = b_.seq(*s, f);
            }
            auto rest = tail(i + 1);
            if (!rest) return rest.status();
            f = b_.seq(f, *rest);
            return i >= min_items ? b_.optional(f) : f;
        };
        auto body = tail(0);
        if (!body) return body.status();
        auto w1 = ws(), w2 = ws();
        if (!w1) return w1.status();
        if (!w2) return w2.status();
        return b_.seq(b_.seq(b_.seq(b_.literal("["), *w1), *body), b_.seq(*w2, b_.literal("]")));
    }

    // A schema as a rule of its own (array items, property values, branches), so that it may be called many times.
    // A schema with no schema inside (its values are scalars or lists of them: {"type": "integer"}, an enum) is
    // compiled once however often it occurs (the properties of a large object mostly share a few such types); its
    // text is the key, which costs its own size only.
    Result<int32_t> schema_rule(const ojson& schema, const std::string& path, int depth) {
        std::string flat_text;
        if (is_flat(schema)) {
            flat_text = schema.dump();
            if (auto found = flat_rules_.find(flat_text); found != flat_rules_.end()) return found->second;
        }
        const int32_t rule = b_.add_rule(fmt::format("s{}:{}", next_rule_++, path));
        auto body = schema_fragment(schema, path, depth + 1);
        if (!body) return body.status();
        b_.set_body(rule, *body);
        if (!flat_text.empty()) flat_rules_.emplace(std::move(flat_text), rule);
        return rule;
    }

    static bool is_flat(const ojson& schema) {
        if (!schema.is_object()) return false;
        for (const auto& [key, value] : schema.items()) {
            if (value.is_object()) return false;
            if (value.is_array())
                for (const ojson& item : value)
                    if (item.is_structured()) return false;
        }
        return true;
    }

    Result<int32_t> ref_rule(const std::string& ref, const std::string& path) {
        if (auto found = refs_.find(ref); found != refs_.end()) return found->second;
        if (ref.empty() || ref[0] != '#')
            return fail(
                path,
                fmt::format("'$ref' '{}' is not supported (only references into the same document, '#...')", ref));
        const ojson* target = &root_;
        if (ref.size() > 1) {
            try {
                target = &root_.at(ojson::json_pointer(ref.substr(1)));
            } catch (const std::exception&) {
                return fail(path, fmt::format("'$ref' '{}' points at nothing", ref));
            }
        }
        const int32_t rule = b_.add_rule(fmt::format("ref:{}", ref));
        refs_[ref] = rule;  // before the body: a recursive reference calls the rule being defined
        auto body = schema_fragment(*target, ref, 1);
        if (!body) return body.status();
        b_.set_body(rule, *body);
        return rule;
    }

    Result<ojson> resolve(const ojson& schema, const std::string& path, int hops = 0) {
        if (!schema.is_object() || !schema.contains("$ref")) return schema;
        if (hops > 32) return fail(path, "'$ref' chain too long");
        if (!schema.at("$ref").is_string()) return fail(path, "'$ref' must be a string");
        const std::string ref = schema.at("$ref").get<std::string>();
        if (ref.empty() || ref[0] != '#') return fail(path, fmt::format("'$ref' '{}' is not supported", ref));
        try {
            const ojson& target = ref.size() > 1 ? root_.at(ojson::json_pointer(ref.substr(1))) : root_;
            ojson merged = target;
            if (merged.is_object())
                for (const auto& [k, v] : schema.items())
                    if (k != "$ref") merged[k] = v;
            return resolve(merged, ref, hops + 1);
        } catch (const std::exception&) {
            return fail(path, fmt::format("'$ref' '{}' points at nothing", ref));
        }
    }

    // allOf: one schema with every constraint of both (errors where two constraints of one keyword differ).
    Result<ojson> merge(ojson a, const ojson& b_in, const std::string& path) {
        auto b = resolve(b_in, path);
        if (!b) return b.status();
        if (!b->is_object()) return fail(path, "allOf entries must be schema objects");
        auto ra = resolve(a, path);
        if (!ra) return ra.status();
        a = *ra;
        // additionalProperties of one side sees only that side's properties (checked after the merge below).
        const ojson a_props = a.value("properties", ojson::object()), b_props = b->value("properties", ojson::object());
        const ojson a_extra = a.value("additionalProperties", ojson(true));
        const ojson b_extra = b->value("additionalProperties", ojson(true));
        for (const auto& [k, v] : b->items()) {
            if (annotations().count(k)) continue;
            if (!a.contains(k)) {
                a[k] = v;
            } else if (k == "properties") {
                for (const auto& [name, prop] : v.items())
                    a[k][name] = a[k].contains(name) ? ojson{{"allOf", {a[k][name], prop}}} : prop;
            } else if (k == "required") {
                for (const ojson& name : v)
                    if (std::find(a[k].begin(), a[k].end(), name) == a[k].end()) a[k].push_back(name);
            } else if (k == "allOf") {
                for (const ojson& s : v) a[k].push_back(s);
            } else if (k == "additionalProperties" && (v == false || a[k] == false)) {
                a[k] = false;
            } else if (k == "type" && a[k] != v) {
                auto types = [](const ojson& t) {
                    std::set<std::string> out;
                    if (t.is_string()) out.insert(t.get<std::string>());
                    if (t.is_array())
                        for (const ojson& x : t)
                            if (x.is_string()) out.insert(x.get<std::string>());
                    return out;
                };
                const std::set<std::string> ta = types(a[k]), tb = types(v);
                ojson both = ojson::array();
                for (const std::string& t : ta)
                    if (tb.count(t) || (t == "integer" && tb.count("number")))
                        both.push_back(t);
                    else if (t == "number" && tb.count("integer"))
                        both.push_back("integer");
                if (both.empty()) return fail(path, "allOf: the branches' types do not intersect");
                a[k] = both.size() == 1 ? both[0] : both;
            } else if (a[k].is_number() && v.is_number() && lower_bounds().count(k)) {
                if (v.get<double>() > a[k].get<double>()) a[k] = v;  // both hold: the tighter one
            } else if (a[k].is_number() && v.is_number() && upper_bounds().count(k)) {
                if (v.get<double>() < a[k].get<double>()) a[k] = v;
            } else if (a[k] != v) {
                return fail(path, fmt::format("allOf: two different '{}' cannot be combined", k));
            }
        }
        for (const auto& [props, extra] : {std::tie(a_props, a_extra), std::tie(b_props, b_extra)}) {
            if (extra == true || !a.contains("properties")) continue;
            ojson kept = ojson::object();
            for (const auto& [name, prop] : a.at("properties").items()) {
                if (props.contains(name)) {
                    kept[name] = prop;
                    continue;
                }
                if (extra.is_object())
                    return fail(path, fmt::format("allOf: property '{}' under another branch's additionalProperties "
                                                  "schema is not supported",
                                                  name));
                const ojson required = a.value("required", ojson::array());
                if (std::find(required.begin(), required.end(), ojson(name)) != required.end())
                    return fail(path, fmt::format("allOf: required property '{}' is excluded by another branch's "
                                                  "additionalProperties false",
                                                  name));
            }
            a["properties"] = kept;
        }
        return a;
    }

    // ---- oneOf: branches that no value can match both (a sufficient test; anything else is refused) ----
    // Kinds a schema can match: null, boolean, string, integer, fraction (a non-integer number), object, array.
    static std::set<std::string> kinds_of_value(const ojson& v) {
        if (v.is_null()) return {"null"};
        if (v.is_boolean()) return {"boolean"};
        if (v.is_string()) return {"string"};
        if (v.is_number()) return {std::floor(v.get<double>()) == v.get<double>() ? "integer" : "fraction"};
        if (v.is_object()) return {"object"};
        return {"array"};
    }
    static std::set<std::string> kinds(const ojson& s) {
        const std::set<std::string> all = {"null", "boolean", "string", "integer", "fraction", "object", "array"};
        if (!s.is_object()) return all;
        std::set<std::string> out;
        if (s.contains("const")) return kinds_of_value(s.at("const"));
        if (s.contains("enum") && s.at("enum").is_array()) {
            for (const ojson& v : s.at("enum")) out.merge(kinds_of_value(v));
            return out;
        }
        if (!s.contains("type")) return all;
        const ojson& t = s.at("type");
        std::vector<std::string> types;
        if (t.is_string()) types.push_back(t.get<std::string>());
        if (t.is_array())
            for (const ojson& x : t)
                if (x.is_string()) types.push_back(x.get<std::string>());
        for (const std::string& type : types) {
            if (type == "number") {
                out.insert("integer");
                out.insert("fraction");
            } else {
                out.insert(type);
            }
        }
        return out;
    }
    // The values a schema allows when it lists them (const / enum).
    static std::optional<std::vector<ojson>> listed_values(const ojson& s) {
        if (!s.is_object()) return std::nullopt;
        if (s.contains("const")) return std::vector<ojson>{s.at("const")};
        if (s.contains("enum") && s.at("enum").is_array())
            return std::vector<ojson>(s.at("enum").begin(), s.at("enum").end());
        return std::nullopt;
    }
    bool disjoint(const ojson& a, const ojson& b, const std::string& path, int depth = 0) {
        if (depth > 8) return false;
        std::set<std::string> ka = kinds(a), kb = kinds(b), both;
        for (const std::string& k : ka)
            if (kb.count(k)) both.insert(k);
        if (both.empty()) return true;
        const auto va = listed_values(a), vb = listed_values(b);
        if (va && vb) {
            bool common = false;
            for (const ojson& x : *va)
                for (const ojson& y : *vb) common = common || x == y;
            if (!common) return true;
        }
        if (both != std::set<std::string>{"object"} || !a.is_object() || !b.is_object()) return false;
        const ojson none = ojson::object(), no_list = ojson::array();
        const ojson& pa = a.contains("properties") ? a.at("properties") : none;
        const ojson& pb = b.contains("properties") ? b.at("properties") : none;
        const ojson& ra = a.contains("required") ? a.at("required") : no_list;
        const ojson& rb = b.contains("required") ? b.at("required") : no_list;
        auto has = [](const ojson& list, const std::string& name) {
            return list.is_array() && std::find(list.begin(), list.end(), ojson(name)) != list.end();
        };
        // A property both require, with values that cannot be equal (a discriminator).
        for (const auto& [name, sa] : pa.items()) {
            if (!pb.contains(name) || !has(ra, name) || !has(rb, name)) continue;
            auto xa = resolve(sa, path), xb = resolve(pb.at(name), path);
            if (xa && xb && disjoint(*xa, *xb, path, depth + 1)) return true;
        }
        // A property one requires that the other, closed, does not allow.
        auto closed = [&](const ojson& s) {
            return s.value("additionalProperties", ojson(!options_.no_additional_properties)) == false;
        };
        for (const ojson& name : ra)
            if (name.is_string() && !pb.contains(name.get<std::string>()) && closed(b)) return true;
        for (const ojson& name : rb)
            if (name.is_string() && !pa.contains(name.get<std::string>()) && closed(a)) return true;
        return false;
    }

    Result<Fragment> schema_fragment(const ojson& schema_in, const std::string& path, int depth) {
        if (depth > kMaxSchemaDepth) return fail(path, "schemas nest too deeply");
        if (schema_in.is_boolean()) {
            if (!schema_in.get<bool>()) return fail(path, "the schema 'false' matches nothing");
            auto any = any_rule("value");
            if (!any) return any.status();
            return b_.call(*any);
        }
        if (!schema_in.is_object()) return fail(path, "a schema must be an object or a boolean");
        for (const auto& [k, v] : schema_in.items())
            if (!annotations().count(k) && !supported_keywords().count(k))
                return fail(path, fmt::format("keyword '{}' is not supported", k));
        if (schema_in.contains("$ref")) {
            if (schema_in.size() == 1 ||
                std::all_of(schema_in.items().begin(), schema_in.items().end(),
                            [](const auto& kv) { return kv.key() == "$ref" || annotations().count(kv.key()); })) {
                if (!schema_in.at("$ref").is_string()) return fail(path, "'$ref' must be a string");
                auto rule = ref_rule(schema_in.at("$ref").get<std::string>(), path);
                if (!rule) return rule.status();
                return b_.call(*rule);
            }
            auto resolved = resolve(schema_in, path);
            if (!resolved) return resolved.status();
            return schema_fragment(*resolved, path, depth + 1);
        }
        ojson schema = schema_in;
        if (schema.contains("allOf")) {
            if (!schema.at("allOf").is_array() || schema.at("allOf").empty())
                return fail(path, "'allOf' must be a non-empty list");
            ojson parts = schema.at("allOf");
            schema.erase("allOf");
            for (const ojson& part : parts) {
                auto merged = merge(schema, part, path + "/allOf");
                if (!merged) return merged.status();
                schema = *merged;
            }
            return schema_fragment(schema, path, depth + 1);
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (!schema.contains(key)) continue;
            if (!schema.at(key).is_array() || schema.at(key).empty())
                return fail(path, fmt::format("'{}' must be a non-empty list", key));
            ojson branches = schema.at(key);
            ojson rest = schema;
            rest.erase(key);
            bool rest_constrains = false;
            for (const auto& [k, v] : rest.items()) rest_constrains = rest_constrains || !annotations().count(k);
            std::vector<Fragment> choices;
            std::vector<ojson> resolved;  // oneOf: the branches as generated, for the exclusivity check
            for (size_t i = 0; i < branches.size(); ++i) {
                const std::string where = fmt::format("{}/{}/{}", path, key, i);
                ojson branch = branches[i];
                if (rest_constrains) {
                    auto merged = merge(rest, branch, where);
                    if (!merged) return merged.status();
                    branch = *merged;
                }
                if (std::string(key) == "oneOf") {
                    auto r = resolve(branch, where);
                    if (!r) return r.status();
                    for (size_t j = 0; j < resolved.size(); ++j)
                        if (!disjoint(resolved[j], *r, where))
                            return fail(path, fmt::format("oneOf branches {} and {} can both match one value, which "
                                                          "oneOf forbids; make them disjoint (other types, or a "
                                                          "required property with other const / enum values) or use "
                                                          "anyOf",
                                                          j, i));
                    resolved.push_back(*r);
                }
                auto rule = schema_rule(branch, where, depth);
                if (!rule) return rule.status();
                choices.push_back(b_.call(*rule));
            }
            return b_.alt(choices);
        }
        if (schema.contains("const")) return b_.literal(schema.at("const").dump());
        if (schema.contains("enum")) {
            if (!schema.at("enum").is_array() || schema.at("enum").empty())
                return fail(path, "'enum' must be a non-empty list");
            std::vector<Fragment> choices;
            for (const ojson& v : schema.at("enum")) choices.push_back(b_.literal(v.dump()));
            return b_.alt(choices);
        }
        if (schema.contains("uniqueItems") && schema.at("uniqueItems") != false)
            return fail(path, "keyword 'uniqueItems' is not supported (only false)");

        std::vector<std::string> types;
        if (schema.contains("type")) {
            const ojson& t = schema.at("type");
            if (t.is_string())
                types.push_back(t.get<std::string>());
            else if (t.is_array())
                for (const ojson& x : t) {
                    if (!x.is_string()) return fail(path, "'type' must be a string or a list of strings");
                    types.push_back(x.get<std::string>());
                }
            else
                return fail(path, "'type' must be a string or a list of strings");
        } else {
            // No type: the kind the keywords are about, or any value.
            auto has = [&](std::initializer_list<const char*> keys) {
                for (const char* k : keys)
                    if (schema.contains(k)) return true;
                return false;
            };
            if (has({"properties", "required", "additionalProperties", "minProperties", "maxProperties"}))
                types.push_back("object");
            if (has({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
            if (has({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
            if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.push_back("number");
            if (types.empty()) {
                auto any = any_rule("value");
                if (!any) return any.status();
                return b_.call(*any);
            }
        }
        std::vector<Fragment> choices;
        for (const std::string& type : types) {
            auto f = typed_fragment(schema, type, path, depth);
            if (!f) return f.status();
            choices.push_back(*f);
        }
        return choices.size() == 1 ? choices[0] : b_.alt(choices);
    }

    Result<Fragment> typed_fragment(const ojson& schema, const std::string& type, const std::string& path, int depth) {
        if (type == "null") return b_.literal("null");
        if (type == "boolean") return b_.alt({b_.literal("true"), b_.literal("false")});
        if (type == "string") return string_fragment(schema, path);
        if (type == "integer" || type == "number") return number_fragment(schema, type == "integer", path);
        if (type == "array") return array_fragment(schema, path, depth);
        if (type == "object") return object_fragment(schema, path, depth);
        return fail(path, fmt::format("unknown type '{}'", type));
    }

    Result<std::optional<int64_t>> count(const ojson& schema, const char* key, const std::string& path) {
        if (!schema.contains(key)) return std::optional<int64_t>();
        const ojson& v = schema.at(key);
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
            return fail(path, fmt::format("'{}' must be a non-negative integer", key));
        return std::optional<int64_t>(v.get<int64_t>());
    }

    Result<Fragment> string_fragment(const ojson& schema, const std::string& path) {
        auto min_len = count(schema, "minLength", path);
        auto max_len = count(schema, "maxLength", path);
        if (!min_len) return min_len.status();
        if (!max_len) return max_len.status();
        const bool lengths = min_len->has_value() || max_len->has_value();
        const bool pattern = schema.contains("pattern"), format = schema.contains("format");
        if (pattern && format) return fail(path, "combining 'pattern' and 'format' is not supported");
        Fragment inner = b_.empty();
        if (pattern || format) {
            std::string regex;
            RegexOptions options{.search = pattern, .json_string = true};
            if (pattern) {
                if (!schema.at("pattern").is_string()) return fail(path, "'pattern' must be a string");
                regex = schema.at("pattern").get<std::string>();
            } else {
                if (!schema.at("format").is_string()) return fail(path, "'format' must be a string");
                const std::string name = schema.at("format").get<std::string>();
                auto found = formats().find(name);
                if (found == formats().end())
                    return fail(path, fmt::format("format '{}' is not supported (supported: date, time, date-time, "
                                                  "uuid, email, ipv4)",
                                                  name));
                regex = found->second;
            }
            auto f = compile_regex(regex, b_, options);
            if (!f) return fail(path, f.status().message());
            inner = *f;
            if (lengths) {
                auto bounded = b_.json_chars_bounded(inner, min_len->value_or(0), *max_len);
                if (!bounded) return fail(path, bounded.status().message());
                inner = *bounded;
            }
        } else {
            // The characters inline, not a rule of their own: a token spanning several characters then stays inside
            // this rule, so its class is known without the stack (CompiledGrammar's accepted set).
            auto c = compile_regex(kJsonChar, b_);
            if (!c) return c.status();
            if (lengths) {
                auto r = b_.repeat(*c, min_len->value_or(0), *max_len);
                if (!r) return fail(path, r.status().message());
                inner = *r;
            } else {
                inner = b_.star(*c);
            }
        }
        return b_.seq(b_.seq(b_.literal("\""), inner), b_.literal("\""));
    }

    Result<Fragment> number_fragment(const ojson& schema, bool integer, const std::string& path) {
        // Bounds as (value, exclusive); draft-4 boolean exclusiveMinimum/Maximum modify minimum/maximum.
        std::optional<double> lo, hi;
        bool lo_excl = false, hi_excl = false;
        for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
            if (!schema.contains(key)) continue;
            const ojson& v = schema.at(key);
            const std::string k = key;
            if (v.is_boolean()) {
                if (k == "exclusiveMinimum")
                    lo_excl = v.get<bool>();
                else if (k == "exclusiveMaximum")
                    hi_excl = v.get<bool>();
                else
                    return fail(path, fmt::format("'{}' must be a number", key));
                continue;
            }
            if (!v.is_number()) return fail(path, fmt::format("'{}' must be a number", key));
            const double x = v.get<double>();
            if (!(std::abs(x) <= kMaxNumberBound))
                return fail(path, fmt::format("'{}' {} is beyond the supported +-1e15", key, x));
            const bool min_side = k == "minimum" || k == "exclusiveMinimum";
            const bool excl = k.rfind("exclusive", 0) == 0;
            std::optional<double>& bound = min_side ? lo : hi;
            bool& bound_excl = min_side ? lo_excl : hi_excl;
            // The tighter of two bounds on one side.
            if (!bound || (min_side ? x > *bound : x < *bound) || (x == *bound && excl)) {
                bound = x;
                bound_excl = excl;
            }
        }
        if (!lo && !hi) return compile_regex(integer ? "-?(0|[1-9][0-9]*)" : kNumber, b_);
        // Integer values n with lo <= n <= hi (strict where exclusive).
        std::optional<int64_t> ilo, ihi;
        if (lo) ilo = lo_excl ? int64_t(std::floor(*lo)) + 1 : int64_t(std::ceil(*lo));
        if (hi) ihi = hi_excl ? int64_t(std::ceil(*hi)) - 1 : int64_t(std::floor(*hi));
        std::vector<std::string> parts;
        if (!ilo || !ihi || *ilo <= *ihi) {
            const std::string ints = integer_range_regex(ilo, ihi);
            if (!ints.empty()) parts.push_back(ints);
        }
        if (!integer) {
            // Numbers with a fraction, I.F >= 0 and -I.F < 0, by their magnitude's range.
            if (!hi || *hi >= 0) {
                const bool above_zero = lo && *lo >= 0;
                fraction_numbers("", above_zero ? *lo : 0.0, above_zero && lo_excl, hi, hi_excl, parts);
            }
            if (!lo || *lo < 0) {
                const bool below_zero = hi && *hi < 0;
                fraction_numbers("-", below_zero ? -*hi : 0.0, !below_zero || hi_excl,
                                 lo ? std::optional<double>(-*lo) : std::nullopt, lo_excl, parts);
            }
        }
        if (parts.empty()) return fail(path, "no number satisfies the bounds");
        std::string regex;
        for (const std::string& p : parts) regex += fmt::format("{}({})", regex.empty() ? "" : "|", p);
        return compile_regex(regex, b_);
    }

    Result<Fragment> array_fragment(const ojson& schema, const std::string& path, int depth) {
        auto min_items = count(schema, "minItems", path);
        auto max_items = count(schema, "maxItems", path);
        if (!min_items) return min_items.status();
        if (!max_items) return max_items.status();
        std::vector<int32_t> prefix;
        if (schema.contains("prefixItems")) {
            if (!schema.at("prefixItems").is_array()) return fail(path, "'prefixItems' must be a list of schemas");
            for (size_t i = 0; i < schema.at("prefixItems").size(); ++i) {
                auto rule = schema_rule(schema.at("prefixItems")[i], fmt::format("{}/prefixItems/{}", path, i), depth);
                if (!rule) return rule.status();
                prefix.push_back(*rule);
            }
        }
        int32_t item = -1;
        if (!schema.contains("items") || schema.at("items") != false) {
            if (schema.contains("items") && schema.at("items").is_array())
                return fail(path, "'items' as a list (draft 4 tuples) is not supported; use 'prefixItems'");
            auto rule =
                schema.contains("items") ? schema_rule(schema.at("items"), path + "/items", depth) : any_rule("value");
            if (!rule) return rule.status();
            item = *rule;
        }
        auto f = list_fragment(prefix, item, min_items->value_or(0), *max_items);
        if (!f) return fail(path, f.status().message());
        return f;
    }

    Result<Fragment> object_fragment(const ojson& schema, const std::string& path, int depth) {
        const ojson no_properties = ojson::object();
        const ojson& properties = schema.contains("properties") ? schema.at("properties") : no_properties;
        if (!properties.is_object()) return fail(path, "'properties' must be an object");
        std::set<std::string> required;
        if (schema.contains("required")) {
            if (!schema.at("required").is_array()) return fail(path, "'required' must be a list of names");
            for (const ojson& name : schema.at("required")) {
                if (!name.is_string()) return fail(path, "'required' must be a list of names");
                if (!properties.contains(name.get<std::string>()))
                    return fail(path, fmt::format("required property '{}' is not in 'properties' (not supported)",
                                                  name.get<std::string>()));
                required.insert(name.get<std::string>());
            }
        }
        const ojson additional = schema.value("additionalProperties", ojson(!options_.no_additional_properties));
        if (!additional.is_boolean() && !additional.is_object())
            return fail(path, "'additionalProperties' must be a boolean or a schema");
        auto min_props = count(schema, "minProperties", path);
        auto max_props = count(schema, "maxProperties", path);
        if (!min_props) return min_props.status();
        if (!max_props) return max_props.status();
        const int64_t lo = min_props->value_or(0);
        const std::optional<int64_t> hi = *max_props;
        if (hi && *hi < lo) return fail(path, "no object satisfies minProperties and maxProperties");
        if (properties.empty()) {
            if (additional == false) {
                if (lo > 0) return fail(path, "minProperties with no properties allowed (additionalProperties false)");
                return b_.literal("{}");  // with optional whitespace? "{}" is valid JSON
            }
            // A free-form map's keys may repeat ({"a": 1, "a": 2} is one property): only the counts that repeats
            // cannot break are kept.
            if (lo > 1)
                return fail(path,
                            "minProperties above 1 is supported only for listed properties (the keys of a "
                            "free-form map may repeat)");
            auto key = any_rule("string");
            if (!key) return key.status();
            auto value = additional.is_object() ? schema_rule(additional, path + "/additionalProperties", depth)
                                                : any_rule("value");
            if (!value) return value.status();
            return map_fragment(*key, *value, lo, hi);
        }
        // Members in key order, optional ones may be left out. Two rules per member keep the grammar linear in the
        // number of members (listing every possible next member at each position was quadratic: 5,000 optional
        // properties took gigabytes):
        //   pick_i ::= key_i ":" value_i next_{i+1} | pick_{i+1}  (the second branch only if member i is optional)
        //   next_i ::= "," pick_i | ""                             ("" only if members i.. are all optional)
        //   object ::= "{" (pick_0 | "") "}"                       ("" only if every member is optional)
        // Only the listed properties are written (as XGrammar does), whatever additionalProperties allows.
        struct Member {
            std::string key_text;
            int32_t value_rule;
            bool required;
        };
        std::vector<Member> members;
        for (const auto& [name, prop] : properties.items()) {
            auto rule = schema_rule(prop, path + "/properties/" + name, depth);
            if (!rule) return rule.status();
            members.push_back({ojson(name).dump(), *rule, required.count(name) > 0});
        }
        const size_t n = members.size();
        // all_optional_from[i]: members i.. are all optional.
        std::vector<bool> all_optional_from(n + 1, true);
        for (size_t i = n; i-- > 0;) all_optional_from[i] = all_optional_from[i + 1] && !members[i].required;
        // The matcher follows one parse per member that may come next (a run of optional members and the member
        // after it), at every byte of the keys: a long run would make each step slow and past FramePool::kMaxStacks
        // the object could not be written at all.
        size_t run = 0, longest_run = 0;
        for (const Member& m : members) {
            run = m.required ? 0 : run + 1;
            longest_run = std::max(longest_run, run);
        }
        if (longest_run > kMaxOptionalPropertiesInARow)
            return fail(path, fmt::format("the object has {} properties, {} of them optional in a row; at most {} "
                                          "optional properties in a row are supported (mark some required)",
                                          n, longest_run, kMaxOptionalPropertiesInARow));
        const int64_t num_required = int64_t(required.size());
        if (lo > int64_t(n))
            return fail(path, fmt::format("minProperties {} is more than the {} listed properties (only listed "
                                          "properties are written)",
                                          lo, n));
        if (hi && num_required > *hi)
            return fail(path,
                        fmt::format("maxProperties {} is less than the {} required properties", *hi, num_required));
        // minProperties / maxProperties that the required members alone do not settle: the rules also count the
        // members written so far (pick_i,c / next_i,c with c members before member i).
        const bool counted = lo > num_required || (hi && *hi < int64_t(n));
        const int64_t cap = counted ? (hi ? *hi : lo) : 0;  // counts past `lo` (no maximum) are all alike
        if (int64_t(n + 1) * (cap + 1) > kMaxCountedPropertyStates)
            return fail(path, fmt::format("minProperties / maxProperties over {} properties need more than {} "
                                          "grammar states",
                                          n, kMaxCountedPropertyStates));
        const auto after = [&](int64_t c) { return counted ? (hi ? c + 1 : std::min(c + 1, lo)) : 0; };
        const auto room = [&](int64_t c) { return !counted || !hi || c < *hi; };  // another member may come
        const auto may_end = [&](size_t i, int64_t c) { return all_optional_from[i] && (!counted || c >= lo); };
        // Which states can still end in a valid object (the others get no rule, and no branch leads to them).
        const size_t states = size_t(cap + 1);
        std::vector<char> can_pick(n * states, 0), can_next((n + 1) * states, 0);
        for (size_t i = n + 1; i-- > 0;) {
            for (int64_t c = 0; c <= cap; ++c) {
                if (i < n) {
                    bool ok = room(c) && can_next[(i + 1) * states + size_t(after(c))];
                    ok = ok || (!members[i].required && i + 1 < n && can_pick[(i + 1) * states + size_t(c)]);
                    can_pick[i * states + size_t(c)] = ok;
                }
                can_next[i * states + size_t(c)] =
                    may_end(i, c) || (i < n && room(c) && can_pick[i * states + size_t(c)]);
            }
        }
        const bool empty_ok = may_end(0, 0);
        if (!can_pick[0] && !empty_ok) return fail(path, "no object satisfies minProperties and maxProperties");
        const int id = next_rule_++;
        std::vector<int32_t> pick(n * states, -1), next((n + 1) * states, -1);
        for (size_t i = 0; i <= n; ++i) {
            for (int64_t c = 0; c <= cap; ++c) {
                const std::string where = counted ? fmt::format("{}.{}", i, c) : std::to_string(i);
                if (i < n && can_pick[i * states + size_t(c)])
                    pick[i * states + size_t(c)] = b_.add_rule(fmt::format("o{}_pick{}:{}", id, where, path));
                if (can_next[i * states + size_t(c)])
                    next[i * states + size_t(c)] = b_.add_rule(fmt::format("o{}_next{}:{}", id, where, path));
            }
        }
        for (size_t i = 0; i < n; ++i) {
            for (int64_t c = 0; c <= cap; ++c) {
                const int32_t rule = pick[i * states + size_t(c)];
                if (rule < 0) continue;
                std::vector<Fragment> choices;
                const int32_t then = room(c) ? next[(i + 1) * states + size_t(after(c))] : -1;
                if (then >= 0) {
                    auto member =
                        spaced({b_.literal(members[i].key_text), b_.literal(":"), b_.call(members[i].value_rule)});
                    if (!member) return member.status();
                    choices.push_back(b_.seq(*member, b_.call(then)));
                }
                if (!members[i].required && i + 1 < n && pick[(i + 1) * states + size_t(c)] >= 0)
                    choices.push_back(b_.call(pick[(i + 1) * states + size_t(c)]));
                b_.set_body(rule, b_.alt(choices));
            }
        }
        for (size_t i = 0; i <= n; ++i) {
            for (int64_t c = 0; c <= cap; ++c) {
                const int32_t rule = next[i * states + size_t(c)];
                if (rule < 0) continue;
                std::vector<Fragment> choices;
                if (may_end(i, c)) choices.push_back(b_.empty());
                if (i < n && room(c) && pick[i * states + size_t(c)] >= 0) {
                    auto comma = spaced({b_.literal(","), b_.call(pick[i * states + size_t(c)])});
                    auto w = ws();
                    if (!comma) return comma.status();
                    if (!w) return w.status();
                    choices.push_back(b_.seq(*w, *comma));
                }
                b_.set_body(rule, b_.alt(choices));
            }
        }
        std::optional<Fragment> first;
        if (pick[0] >= 0) first = b_.call(pick[0]);
        Fragment inner = !first ? b_.empty() : empty_ok ? b_.optional(*first) : *first;
        auto w1 = ws(), w2 = ws();
        if (!w1) return w1.status();
        if (!w2) return w2.status();
        return b_.seq(b_.seq(b_.seq(b_.literal("{"), *w1), inner), b_.seq(*w2, b_.literal("}")));
    }

    const ojson& root_;
    JsonSchemaOptions options_;
    GrammarBuilder b_;
    std::map<std::string, int32_t> refs_;
    std::unordered_map<std::string, int32_t> flat_rules_;  // flat schema text -> its rule (schema_rule)
    int next_rule_ = 0;
};

}  // namespace

Result<Grammar> json_schema_grammar(const ojson& schema, const JsonSchemaOptions& options) {
    return SchemaCompiler(schema, options).compile_schema();
}

Result<Grammar> json_sequence_grammar(const ojson& schema, const JsonSequenceFormat& format,
                                      const JsonSchemaOptions& options) {
    return SchemaCompiler(schema, options).compile_sequence(format);
}

Result<Grammar> json_object_grammar(const JsonSchemaOptions& options) {
    return SchemaCompiler(ojson::object(), options).compile_any_object();
}

}  // namespace taco::structured
