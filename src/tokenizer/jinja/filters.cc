#include "tokenizer/jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/string_methods.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

const std::set<std::string>& filter_names() {
    static const std::set<std::string> kNames = {
        "abs",     "batch",   "capitalize", "center",      "count",  "d",          "default",  "dictsort", "e",
        "escape",  "first",   "float",      "forceescape", "format", "indent",     "int",      "items",    "join",
        "last",    "length",  "list",       "lower",       "map",    "max",        "min",      "reject",   "rejectattr",
        "replace", "reverse", "round",      "safe",        "select", "selectattr", "sort",     "string",   "sum",
        "title",   "tojson",  "trim",       "unique",      "upper",  "wordcount",  "truncate", "attr"};
    return kNames;
}

Result<BoundArgs> bind(CallArgs& args, std::vector<std::string> names, size_t required, const std::string& filter) {
    return BoundArgs::bind(args, names, required, filter);
}

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0 (digits become integers).
Result<Value> lookup_path(const Value& item, const Value& attribute, Evaluator& ev) {
    if (attribute.is_int()) return ev.get_item(item, attribute);
    Value current = item;
    std::string path = attribute.str();
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        Value key = Value::string(part);
        if (!part.empty() &&
            std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            key = Value::integer(std::strtoll(part.c_str(), nullptr, 10));
        TACO_ASSIGN_OR_RETURN(current, ev.get_item(current, key));
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

Value case_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value::string(str_lower(v.as_string()));
    return v;
}

Status sort_values(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    Status status;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        auto less = reverse ? value_less(keys[b], keys[a]) : value_less(keys[a], keys[b]);
        if (!less.is_ok()) {
            status = less.status();
            return false;
        }
        return *less;
    });
    TACO_RETURN_IF_ERROR(status);
    std::vector<Value> sorted;
    for (size_t i : order) sorted.push_back(items[i]);
    items = std::move(sorted);
    return Status::ok();
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// jinja2's title filter: upper-cases the first character after each run of "-", whitespace, "(", "{", "[", "<".
std::string jinja_title(const std::string& s) {
    std::string out;
    bool word_start = true;
    for (char32_t cp : to_code_points(s)) {
        bool delimiter = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_python_space(cp);
        if (delimiter) {
            append_utf8(cp, out);
            word_start = true;
        } else {
            append_utf8(word_start ? to_upper(cp) : to_lower(cp), out);
            word_start = false;
        }
    }
    return out;
}

Result<Value> python_int(const Value& value, const Value& fallback, int base) {
    if (value.is_number()) {
        if (value.is_float()) {
            double d = value.as_double();
            if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return fallback;
            return Value::integer(static_cast<int64_t>(std::trunc(d)));
        }
        return Value::integer(value.as_int());
    }
    if (!value.is_string()) return fallback;
    std::string s = str_strip(value.as_string(), nullptr, true, true);
    std::string digits;
    for (char c : s)
        if (c != '_') digits += c;
    if (!digits.empty()) {
        char* end = nullptr;
        errno = 0;
        long long i = std::strtoll(digits.c_str(), &end, base);
        if (*end == '\0' && errno == 0 && !std::isspace(static_cast<unsigned char>(digits[0])))
            return Value::integer(i);
        end = nullptr;
        double d = std::strtod(digits.c_str(), &end);
        if (*end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value::integer(static_cast<int64_t>(std::trunc(d)));
    }
    return fallback;
}

Result<Value> select_like(const std::string& name, const Value& value, CallArgs& args, Evaluator& ev) {
    bool by_attr = name == "selectattr" || name == "rejectattr";
    bool keep_matches = name == "select" || name == "selectattr";
    if (!value.truthy()) return Value::list({});  // jinja2 iterates only `if value`
    TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
    size_t first = 0;
    Value attribute;
    if (by_attr) {
        if (args.positional.empty()) return error("{}: missing attribute argument", name);
        attribute = args.positional[0];
        first = 1;
    }
    std::string test;
    CallArgs test_args;
    if (args.positional.size() > first) {
        test = args.positional[first].str();
        test_args.positional.assign(args.positional.begin() + static_cast<long>(first) + 1, args.positional.end());
        test_args.keyword = args.keyword;
    }
    std::vector<Value> out;
    for (const Value& item : items) {
        TACO_RETURN_IF_ERROR(ev.count_step());
        Value subject = item;
        if (by_attr) {
            TACO_ASSIGN_OR_RETURN(subject, lookup_path(item, attribute, ev));
        }
        bool hit;
        if (test.empty()) {
            hit = subject.truthy();
        } else {
            CallArgs copy = test_args;
            TACO_ASSIGN_OR_RETURN(hit, ev.apply_test(test, subject, copy));
        }
        if (hit == keep_matches) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Result<Value> map_filter(const Value& value, CallArgs& args, Evaluator& ev) {
    if (!value.truthy()) return Value::list({});  // jinja2 iterates only `if value`
    TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
    std::vector<Value> out;
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [k, v] : args.keyword) {
        if (k == "attribute") attribute = &v;
        if (k == "default") fallback = &v;
    }
    if (attribute) {
        for (const Value& item : items) {
            TACO_ASSIGN_OR_RETURN(Value v, lookup_path(item, *attribute, ev));
            out.push_back(v.is_undefined() && fallback ? *fallback : v);
        }
        return Value::list(std::move(out));
    }
    if (args.positional.empty()) return Status::error("map requires a filter argument");
    std::string filter = args.positional[0].str();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : items) {
        TACO_RETURN_IF_ERROR(ev.count_step());
        CallArgs copy = rest;
        TACO_ASSIGN_OR_RETURN(Value v, ev.apply_filter(filter, item, copy));
        out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
}

Result<Value> tojson_filter(const Value& value, CallArgs& args) {
    TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, 0, "tojson"));
    Value::JsonOptions options;
    options.ensure_ascii = a.has(0) && a.get(0).truthy();
    if (a.has(1) && !a.get(1).is_none()) {
        const Value& indent = a.get(1);
        if (indent.is_string()) {
            options.indent_is_string = true;
            options.indent_string = indent.as_string();
        } else if (indent.is_number() && !indent.is_float()) {
            options.indent = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 1 << 16));
        } else {
            return error("tojson: indent must be an int or a str, not {}", indent.type_name());
        }
    }
    bool indented = options.indent >= 0 || options.indent_is_string;
    options.item_separator = indented ? "," : ", ";
    if (a.has(2) && !a.get(2).is_none()) {
        const Value& sep = a.get(2);
        if (!sep.is_sequence() || sep.items().size() != 2 || !sep.items()[0].is_string() || !sep.items()[1].is_string())
            return Status::error("tojson: separators must be a pair of strings");
        options.item_separator = sep.items()[0].as_string();
        options.key_separator = sep.items()[1].as_string();
    }
    options.sort_keys = a.has(3) && a.get(3).truthy();
    TACO_ASSIGN_OR_RETURN(std::string json, value.to_json(options));
    return Value::string(std::move(json));
}

Result<Value> indent_filter(const Value& value, CallArgs& args) {
    TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"width", "first", "blank"}, 0, "indent"));
    // jinja2 appends "\n" to the value itself, so anything but a string fails.
    if (value.is_undefined()) return Status::error(value.undefined_message());
    if (!value.is_string()) return error("unsupported operand type(s) for +=: '{}' and 'str'", value.type_name());
    std::string indention = "    ";
    if (a.has(0)) {
        indention = a.get(0).is_string()
                        ? a.get(0).as_string()
                        : std::string(static_cast<size_t>(std::clamp<int64_t>(a.get(0).as_int(), 0, 4096)), ' ');
    }
    bool first = a.has(1) && a.get(1).truthy();
    bool blank = a.has(2) && a.get(2).truthy();
    std::vector<std::string> lines = str_splitlines(value.str() + "\n");
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) {
            rv += (i ? "\n" + indention : "") + lines[i];
            if (rv.size() > kMaxPrintBytes) return Status::error("indent: result too large");
        }
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) {
            rv += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
            if (rv.size() > kMaxPrintBytes) return Status::error("indent: result too large");
        }
    }
    if (first) rv = indention + rv;
    return Value::string(std::move(rv));
}

Result<Value> round_filter(const Value& value, CallArgs& args) {
    TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"precision", "method"}, 0, "round"));
    int64_t precision = a.has(0) ? a.get(0).as_int() : 0;
    std::string method = a.has(1) ? a.get(1).str() : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        return Status::error("method must be 'common', 'ceil' or 'floor'");
    if (!value.is_number()) return error("type {} doesn't define __round__ method", value.type_name());
    if (method == "common") {
        if (!value.is_float()) return Value::integer(value.as_int());
        if (precision < 0 || precision > 300) return Status::error("round: unsupported precision");
        double d = value.as_double();
        if (!std::isfinite(d)) return value;
        char buf[512];
        std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), d);  // exact decimal, ties to even
        return Value::floating(std::strtod(buf, nullptr));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double v = value.as_double() * scale;
    return Value::floating((method == "ceil" ? std::ceil(v) : std::floor(v)) / scale);
}

Result<Value> min_max(const Value& value, CallArgs& args, bool want_max, Evaluator& ev) {
    TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"case_sensitive", "attribute"}, 0, want_max ? "max" : "min"));
    TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
    if (items.empty()) return Value::undefined("", "No aggregated item, sequence was empty.");
    bool case_sensitive = a.has(0) && a.get(0).truthy();
    size_t best = 0;
    Value best_key;
    for (size_t i = 0; i < items.size(); ++i) {
        Value key = items[i];
        if (a.has(1)) {
            TACO_ASSIGN_OR_RETURN(key, lookup_path(items[i], a.get(1), ev));
        }
        key = case_key(key, case_sensitive);
        if (i == 0) {
            best_key = key;
            continue;
        }
        TACO_ASSIGN_OR_RETURN(bool better, want_max ? value_less(best_key, key) : value_less(key, best_key));
        if (better) {
            best = i;
            best_key = key;
        }
    }
    return items[best];
}

}  // namespace

bool is_known_filter(const std::string& name) { return filter_names().count(name) > 0; }

Result<Value> call_filter(const std::string& name, const Value& value, CallArgs& args, Evaluator& ev) {
    if (!is_known_filter(name)) return error("no filter named '{}'", name);
    if ((name == "int" || name == "float" || name == "attr") && value.is_undefined())
        return Status::error(value.undefined_message());
    if (name == "tojson") return tojson_filter(value, args);
    if (name == "default" || name == "d") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"default_value", "boolean"}, 0, name));
        bool boolean = a.has(1) && a.get(1).truthy();
        if (value.is_undefined() || (boolean && !value.truthy())) return a.get_or(0, Value::string(""));
        return value;
    }
    if (name == "length" || name == "count") {
        switch (value.kind()) {
            case ValueKind::kUndefined: return Value::integer(0);
            case ValueKind::kString: return Value::integer(static_cast<int64_t>(code_point_count(value.as_string())));
            case ValueKind::kList:
            case ValueKind::kTuple: return Value::integer(static_cast<int64_t>(value.items().size()));
            case ValueKind::kDict: return Value::integer(static_cast<int64_t>(value.as_dict().entries.size()));
            default: return error("object of type '{}' has no len()", value.type_name());
        }
    }
    if (name == "trim") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"chars"}, 0, name));
        if (a.has(0) && a.get(0).is_string())
            return Value::string(str_strip(value.str(), &a.get(0).as_string(), true, true));
        return Value::string(str_strip(value.str(), nullptr, true, true));
    }
    if (name == "upper") return Value::string(str_upper(value.str()));
    if (name == "lower") return Value::string(str_lower(value.str()));
    if (name == "capitalize") return Value::string(str_capitalize(value.str()));
    if (name == "title") return Value::string(jinja_title(value.str()));
    if (name == "string" || name == "safe") return Value::string(value.str());
    if (name == "escape" || name == "e" || name == "forceescape") return Value::string(html_escape(value.str()));
    if (name == "wordcount") {
        int64_t words = 0;
        bool in_word = false;
        for (char32_t cp : to_code_points(value.str())) {
            bool w = is_python_alnum(cp) || cp == '_';
            if (w && !in_word) ++words;
            in_word = w;
        }
        return Value::integer(words);
    }
    if (name == "center") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"width"}, 0, name));
        CallArgs call;
        call.positional.push_back(a.get_or(0, Value::integer(80)));
        return call_string_method(value.str(), "center", call);
    }
    if (name == "replace") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"old", "new", "count"}, 2, name));
        CallArgs call;
        call.positional = {Value::string(a.get(0).str()), Value::string(a.get(1).str())};
        if (a.has(2) && !a.get(2).is_none()) call.positional.push_back(a.get(2));
        return call_string_method(value.str(), "replace", call);
    }
    if (name == "format") {
        if (!args.keyword.empty()) {
            ValueDict d;
            for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
            TACO_ASSIGN_OR_RETURN(std::string s, percent_format(value.str(), Value::dict(std::move(d))));
            return Value::string(std::move(s));
        }
        TACO_ASSIGN_OR_RETURN(std::string s, percent_format(value.str(), Value::tuple(args.positional)));
        return Value::string(std::move(s));
    }
    if (name == "indent") return indent_filter(value, args);
    if (name == "truncate") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"length", "killwords", "end", "leeway"}, 0, name));
        int64_t length = a.has(0) ? a.get(0).as_int() : 255;
        bool killwords = a.has(1) && a.get(1).truthy();
        std::string end = a.has(2) ? a.get(2).str() : "...";
        int64_t leeway = a.has(3) && !a.get(3).is_none() ? a.get(3).as_int() : 5;
        int64_t end_len = static_cast<int64_t>(code_point_count(end));
        if (length < end_len) return error("expected length >= {}, got {}", end_len, length);
        if (leeway < 0) return error("expected leeway >= 0, got {}", leeway);
        // jinja2 measures len(value) without converting it: short containers come back unchanged.
        if (!value.is_string()) {
            CallArgs none;
            TACO_ASSIGN_OR_RETURN(Value n, call_filter("length", value, none, ev));
            if (n.as_int() <= length + leeway) return value;
            return error("cannot truncate a {}", value.type_name());
        }
        auto cps = to_code_points(value.as_string());
        if (static_cast<int64_t>(cps.size()) <= length + leeway) return value;
        std::string head = from_code_points(std::vector<char32_t>(cps.begin(), cps.begin() + (length - end_len)));
        if (!killwords) {
            size_t space = head.rfind(' ');
            if (space != std::string::npos) head.resize(space);
        }
        return Value::string(head + end);
    }
    if (name == "attr") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"name"}, 1, name));
        std::string attribute = a.get(0).str();
        // Python attributes only (methods): unlike `.`, the attr filter never falls back to item lookup.
        bool is_method = (value.is_string() && is_string_method(attribute)) ||
                         (value.is_dict() && (is_dict_method(attribute) || is_unsafe_method(value, attribute))) ||
                         (value.is_sequence() && (is_list_method(attribute) || is_unsafe_method(value, attribute)));
        if (is_method || value.is_namespace()) return ev.get_attribute(value, attribute);
        return Value::undefined(attribute,
                                fmt::format("'{}' object has no attribute '{}'", value.type_name(), attribute));
    }
    if (name == "join") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"d", "attribute"}, 0, name));
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        std::string sep = a.has(0) ? a.get(0).str() : "";
        std::string out;
        for (size_t i = 0; i < items.size(); ++i) {
            Value item = items[i];
            if (a.has(1)) {
                TACO_ASSIGN_OR_RETURN(item, lookup_path(item, a.get(1), ev));
            }
            if (i) out += sep;
            out += item.str();
            if (out.size() > ev.limits().max_output_bytes) return Status::error("join result too long");
        }
        return Value::string(std::move(out));
    }
    if (name == "items") {
        if (value.is_undefined()) return Value::list({});
        if (!value.is_dict()) return Status::error("Can only get item pairs from a mapping.");
        std::vector<Value> pairs;
        for (const auto& [k, v] : value.as_dict().entries) pairs.push_back(Value::tuple({k, v}));
        return Value::list(std::move(pairs));
    }
    if (name == "list") {
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        return Value::list(std::move(items));
    }
    if (name == "first" || name == "last") {
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        if (items.empty()) return Value::undefined("", fmt::format("No {} item, sequence was empty.", name));
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        if (value.is_string()) {
            auto cps = to_code_points(value.as_string());
            std::reverse(cps.begin(), cps.end());
            return Value::string(from_code_points(cps));
        }
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    if (name == "map") return map_filter(value, args, ev);
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
        return select_like(name, value, args, ev);
    if (name == "int") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"default", "base"}, 0, name));
        int base = a.has(1) ? static_cast<int>(a.get(1).as_int()) : 10;
        if (base < 2 || base > 36) base = 10;
        return python_int(value, a.get_or(0, Value::integer(0)), base);
    }
    if (name == "float") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"default"}, 0, name));
        if (value.is_number()) return Value::floating(value.as_double());
        if (value.is_string()) {
            std::string raw = str_strip(value.as_string(), nullptr, true, true);
            std::string s;
            for (size_t i = 0; i < raw.size(); ++i) {  // Python accepts "_" between digits
                bool digit_around = i > 0 && i + 1 < raw.size() &&
                                    std::isdigit(static_cast<unsigned char>(raw[i - 1])) &&
                                    std::isdigit(static_cast<unsigned char>(raw[i + 1]));
                if (raw[i] != '_' || !digit_around) s += raw[i];
            }
            char* end = nullptr;
            double d = std::strtod(s.c_str(), &end);
            if (!s.empty() && *end == '\0' && (s.find_first_of("xX") == std::string::npos)) return Value::floating(d);
        }
        return a.get_or(0, Value::floating(0.0));
    }
    if (name == "abs") {
        if (value.is_float()) return Value::floating(std::fabs(value.as_double()));
        if (value.is_number()) {
            if (value.as_int() == INT64_MIN) return Status::error("integer overflow");
            return Value::integer(std::llabs(value.as_int()));
        }
        return error("bad operand type for abs(): '{}'", value.type_name());
    }
    if (name == "round") return round_filter(value, args);
    if (name == "max" || name == "min") return min_max(value, args, name == "max", ev);
    if (name == "sum") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"attribute", "start"}, 0, name));
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        Value total = a.get_or(1, Value::integer(0));
        for (const Value& item : items) {
            Value v = item;
            if (a.has(0) && !a.get(0).is_none()) {
                TACO_ASSIGN_OR_RETURN(v, lookup_path(item, a.get(0), ev));
            }
            TACO_ASSIGN_OR_RETURN(total, binary_op("+", total, v, ev.limits().max_output_bytes));
        }
        return total;
    }
    if (name == "unique") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"case_sensitive", "attribute"}, 0, name));
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        bool case_sensitive = a.has(0) && a.get(0).truthy();
        std::vector<Value> seen, out;
        for (const Value& item : items) {
            Value key = item;
            if (a.has(1) && !a.get(1).is_none()) {
                TACO_ASSIGN_OR_RETURN(key, lookup_path(item, a.get(1), ev));
            }
            key = case_key(key, case_sensitive);
            if (key.kind() == ValueKind::kList || key.is_dict() || key.is_namespace())
                return error("unhashable type: '{}'", key.type_name());
            bool dup = false;
            for (const Value& s : seen) dup = dup || values_equal(s, key);
            if (dup) continue;
            seen.push_back(key);
            out.push_back(item);
        }
        return Value::list(std::move(out));
    }
    if (name == "sort") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"reverse", "case_sensitive", "attribute"}, 0, name));
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        bool case_sensitive = a.has(1) && a.get(1).truthy();
        std::vector<Value> keys;
        for (const Value& item : items) {
            Value key = item;
            if (a.has(2) && !a.get(2).is_none()) {
                TACO_ASSIGN_OR_RETURN(key, lookup_path(item, a.get(2), ev));
            }
            keys.push_back(case_key(key, case_sensitive));
        }
        TACO_RETURN_IF_ERROR(sort_values(items, keys, a.has(0) && a.get(0).truthy()));
        return Value::list(std::move(items));
    }
    if (name == "dictsort") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"case_sensitive", "by", "reverse"}, 0, name));
        if (!value.is_dict()) return Status::error("dictsort: value is not a mapping");
        bool case_sensitive = a.has(0) && a.get(0).truthy();
        std::string by = a.has(1) ? a.get(1).str() : "key";
        if (by != "key" && by != "value") return Status::error("You can only sort by either \"key\" or \"value\"");
        std::vector<Value> items, keys;
        for (const auto& [k, v] : value.as_dict().entries) {
            items.push_back(Value::tuple({k, v}));
            keys.push_back(case_key(by == "key" ? k : v, case_sensitive));
        }
        TACO_RETURN_IF_ERROR(sort_values(items, keys, a.has(2) && a.get(2).truthy()));
        return Value::list(std::move(items));
    }
    if (name == "batch") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind(args, {"linecount", "fill_with"}, 1, name));
        int64_t n = a.get(0).as_int();
        if (n <= 0) return Status::error("batch: linecount must be positive");
        if (n > (int64_t{1} << 20)) return Status::error("batch: linecount too large");
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
        std::vector<Value> out, row;
        for (const Value& item : items) {
            row.push_back(item);
            if (static_cast<int64_t>(row.size()) == n) {
                out.push_back(Value::list(std::move(row)));
                row.clear();
            }
        }
        if (!row.empty()) {
            if (a.has(1) && !a.get(1).is_none())
                while (static_cast<int64_t>(row.size()) < n) row.push_back(a.get(1));
            out.push_back(Value::list(std::move(row)));
        }
        return Value::list(std::move(out));
    }
    return error("no filter named '{}'", name);
}

}  // namespace taco::jinja
