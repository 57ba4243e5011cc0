#include "tokenizer/jinja/string_methods.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

using CodePoints = std::vector<char32_t>;

const std::set<std::string>& string_method_names() {
    static const std::set<std::string> kNames = {
        "startswith", "endswith",  "split",      "rsplit",       "strip",        "lstrip",   "rstrip",    "title",
        "upper",      "lower",     "capitalize", "swapcase",     "replace",      "find",     "rfind",     "index",
        "rindex",     "count",     "join",       "format",       "isdigit",      "isalpha",  "isalnum",   "isspace",
        "islower",    "isupper",   "isnumeric",  "isdecimal",    "zfill",        "ljust",    "rjust",     "center",
        "splitlines", "partition", "rpartition", "removeprefix", "removesuffix", "casefold", "expandtabs"};
    return kNames;
}

Result<std::string> string_arg(const BoundArgs& args, size_t i, const std::string& method) {
    const Value& v = args.get(i);
    if (!v.is_string()) return error("{}() argument must be str, not {}", method, v.type_name());
    return v.as_string();
}

// Clamped [start, end) code-point window as str.find(sub, start, end) uses it.
std::pair<int64_t, int64_t> window(const BoundArgs& args, size_t first, int64_t length) {
    auto clamp = [&](const Value& v, int64_t fallback) {
        if (!v.is_number() || v.is_float()) return fallback;
        int64_t i = v.as_int();
        if (i < 0) i = std::max<int64_t>(0, i + length);
        return std::min(i, length);
    };
    int64_t start = args.has(first) ? clamp(args.get(first), 0) : 0;
    int64_t end = args.has(first + 1) ? clamp(args.get(first + 1), length) : length;
    return {start, end};
}

int64_t find_in(const CodePoints& hay, const CodePoints& needle, int64_t start, int64_t end, bool reverse) {
    int64_t n = static_cast<int64_t>(needle.size());
    if (end - start < n) return -1;
    if (!reverse) {
        for (int64_t i = start; i + n <= end; ++i)
            if (std::equal(needle.begin(), needle.end(), hay.begin() + i)) return i;
    } else {
        for (int64_t i = end - n; i >= start; --i)
            if (std::equal(needle.begin(), needle.end(), hay.begin() + i)) return i;
    }
    return -1;
}

Value string_list(const std::vector<std::string>& parts) {
    std::vector<Value> items;
    for (const auto& p : parts) items.push_back(Value::string(p));
    return Value::list(std::move(items));
}

std::vector<std::string> split_whitespace(const CodePoints& cps, int64_t maxsplit, bool from_right) {
    std::vector<std::string> parts;
    int64_t n = static_cast<int64_t>(cps.size());
    if (!from_right) {
        int64_t i = 0;
        while (true) {
            while (i < n && is_python_space(cps[i])) ++i;
            if (i >= n) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
                int64_t end = n;
                while (end > i && is_python_space(cps[end - 1])) --end;
                parts.push_back(from_code_points(CodePoints(cps.begin() + i, cps.begin() + end)));
                break;
            }
            int64_t j = i;
            while (j < n && !is_python_space(cps[j])) ++j;
            parts.push_back(from_code_points(CodePoints(cps.begin() + i, cps.begin() + j)));
            i = j;
        }
        return parts;
    }
    int64_t i = n;
    while (true) {
        while (i > 0 && is_python_space(cps[i - 1])) --i;
        if (i <= 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
            int64_t begin = 0;
            while (begin < i && is_python_space(cps[begin])) ++begin;
            parts.push_back(from_code_points(CodePoints(cps.begin() + begin, cps.begin() + i)));
            break;
        }
        int64_t j = i;
        while (j > 0 && !is_python_space(cps[j - 1])) --j;
        parts.push_back(from_code_points(CodePoints(cps.begin() + j, cps.begin() + i)));
        i = j;
    }
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
    std::vector<std::string> parts;
    if (!from_right) {
        size_t start = 0;
        while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
            size_t p = s.find(sep, start);
            if (p == std::string::npos) break;
            parts.push_back(s.substr(start, p - start));
            start = p + sep.size();
        }
        parts.push_back(s.substr(start));
        return parts;
    }
    size_t end = s.size();
    int64_t splits = 0;
    while (maxsplit < 0 || splits < maxsplit) {
        if (end < sep.size()) break;
        size_t p = s.rfind(sep, end - sep.size());
        if (p == std::string::npos) break;
        parts.push_back(s.substr(p + sep.size(), end - p - sep.size()));
        end = p;
        ++splits;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::string pad(const std::string& s, int64_t width, const std::string& fill, int mode) {  // 0 left 1 right 2 center
    int64_t len = static_cast<int64_t>(code_point_count(s));
    if (width <= len) return s;
    int64_t marg = width - len;
    int64_t left = mode == 0 ? 0 : mode == 1 ? marg : marg / 2 + (marg & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < marg - left; ++i) out += fill;
    return out;
}

Result<bool> affix_match(const std::string& s, const Value& affix, bool prefix, const BoundArgs& args) {
    CodePoints cps = to_code_points(s);
    auto [start, end] = window(args, 1, static_cast<int64_t>(cps.size()));
    std::string sub = start <= end ? from_code_points(CodePoints(cps.begin() + start, cps.begin() + end)) : "";
    bool empty_window = start > end;
    auto test = [&](const Value& v) -> Result<bool> {
        if (!v.is_string())
            return error("{} first arg must be str or a tuple of str, not {}", prefix ? "startswith" : "endswith",
                         v.type_name());
        if (empty_window) return false;
        const std::string& a = v.as_string();
        if (a.size() > sub.size()) return false;
        return prefix ? sub.compare(0, a.size(), a) == 0 : sub.compare(sub.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.kind() == ValueKind::kTuple) {
        for (const Value& v : affix.items()) {
            TACO_ASSIGN_OR_RETURN(bool hit, test(v));
            if (hit) return true;
        }
        return false;
    }
    return test(affix);
}

}  // namespace

bool is_string_method(const std::string& name) { return string_method_names().count(name) > 0; }

Result<Value> call_string_method(const std::string& s, const std::string& name, CallArgs& call) {
    auto bind = [&](std::vector<std::string> names, size_t required) {
        return BoundArgs::bind(call, names, required, name);
    };
    if (name == "startswith" || name == "endswith") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"prefix", "start", "end"}, 1));
        TACO_ASSIGN_OR_RETURN(bool hit, affix_match(s, a.get(0), name == "startswith", a));
        return Value::boolean(hit);
    }
    if (name == "split" || name == "rsplit") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"sep", "maxsplit"}, 0));
        int64_t maxsplit = a.has(1) ? a.get(1).as_int() : -1;
        bool from_right = name == "rsplit";
        if (!a.has(0) || a.get(0).is_none())
            return string_list(split_whitespace(to_code_points(s), maxsplit, from_right));
        TACO_ASSIGN_OR_RETURN(std::string sep, string_arg(a, 0, name));
        if (sep.empty()) return Status::error("empty separator");
        return string_list(split_sep(s, sep, maxsplit, from_right));
    }
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"chars"}, 0));
        bool left = name != "rstrip", right = name != "lstrip";
        if (!a.has(0) || a.get(0).is_none()) return Value::string(str_strip(s, nullptr, left, right));
        TACO_ASSIGN_OR_RETURN(std::string chars, string_arg(a, 0, name));
        return Value::string(str_strip(s, &chars, left, right));
    }
    if (name == "upper") return Value::string(str_upper(s));
    if (name == "lower" || name == "casefold") return Value::string(str_lower(s));
    if (name == "title") return Value::string(str_title(s));
    if (name == "capitalize") return Value::string(str_capitalize(s));
    if (name == "swapcase") return Value::string(str_swapcase(s));
    if (name == "replace") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"old", "new", "count"}, 2));
        TACO_ASSIGN_OR_RETURN(std::string old_s, string_arg(a, 0, name));
        TACO_ASSIGN_OR_RETURN(std::string new_s, string_arg(a, 1, name));
        int64_t count = a.has(2) ? a.get(2).as_int() : -1;
        std::string out;
        if (old_s.empty()) {
            CodePoints cps = to_code_points(s);
            int64_t done = 0;
            for (size_t i = 0; i <= cps.size(); ++i) {
                if (count < 0 || done < count) {
                    if (out.size() > kMaxPrintBytes) return Status::error("replace: result too large");
                    out += new_s;
                    ++done;
                }
                if (i < cps.size()) append_utf8(cps[i], out);
            }
            return Value::string(std::move(out));
        }
        size_t start = 0;
        int64_t done = 0;
        while (count < 0 || done < count) {
            size_t p = s.find(old_s, start);
            if (p == std::string::npos) break;
            if (out.size() > kMaxPrintBytes) return Status::error("replace: result too large");
            out.append(s, start, p - start);
            out += new_s;
            start = p + old_s.size();
            ++done;
        }
        out.append(s, start, std::string::npos);
        return Value::string(std::move(out));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"sub", "start", "end"}, 1));
        TACO_ASSIGN_OR_RETURN(std::string sub, string_arg(a, 0, name));
        CodePoints hay = to_code_points(s), needle = to_code_points(sub);
        auto [start, end] = window(a, 1, static_cast<int64_t>(hay.size()));
        if (name == "count") {
            if (start > end) return Value::integer(0);
            if (needle.empty()) return Value::integer(end - start + 1);
            int64_t n = 0;
            for (int64_t i = start; (i = find_in(hay, needle, i, end, false)) >= 0;
                 i += static_cast<int64_t>(needle.size()))
                ++n;
            return Value::integer(n);
        }
        int64_t pos = start > end ? -1 : find_in(hay, needle, start, end, name[0] == 'r');
        if (pos < 0 && (name == "index" || name == "rindex")) return Status::error("substring not found");
        return Value::integer(pos);
    }
    if (name == "join") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"iterable"}, 1));
        TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(a.get(0)));
        std::string out;
        for (size_t i = 0; i < items.size(); ++i) {
            if (!items[i].is_string())
                return error("sequence item {}: expected str instance, {} found", i, items[i].type_name());
            if (i) out += s;
            out += items[i].as_string();
            if (out.size() > kMaxPrintBytes) return Status::error("join: result too large");
        }
        return Value::string(std::move(out));
    }
    if (name == "format") {
        TACO_ASSIGN_OR_RETURN(std::string out, brace_format(s, call));
        return Value::string(std::move(out));
    }
    if (name.rfind("is", 0) == 0) {
        CodePoints cps = to_code_points(s);
        if (cps.empty()) return Value::boolean(false);
        if (name == "islower" || name == "isupper") {
            bool any_cased = false;
            for (char32_t cp : cps) {
                if (name == "islower" ? is_python_upper(cp) : is_python_lower(cp)) return Value::boolean(false);
                any_cased = any_cased || is_python_upper(cp) || is_python_lower(cp);
            }
            return Value::boolean(any_cased);
        }
        for (char32_t cp : cps) {
            bool ok = name == "isspace"   ? is_python_space(cp)
                      : name == "isalpha" ? is_python_alpha(cp)
                      : name == "isalnum" ? is_python_alnum(cp)
                                          : is_python_digit(cp);
            if (!ok) return Value::boolean(false);
        }
        return Value::boolean(true);
    }
    if (name == "zfill") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"width"}, 1));
        int64_t width = std::min<int64_t>(a.get(0).as_int(), 1 << 24);
        int64_t len = static_cast<int64_t>(code_point_count(s));
        if (width <= len) return Value::string(s);
        std::string sign, body = s;
        if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
            sign = s.substr(0, 1);
            body = s.substr(1);
        }
        return Value::string(sign + std::string(static_cast<size_t>(width - len), '0') + body);
    }
    if (name == "ljust" || name == "rjust" || name == "center") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"width", "fillchar"}, 1));
        std::string fill = a.has(1) && a.get(1).is_string() ? a.get(1).as_string() : " ";
        if (code_point_count(fill) != 1) return Status::error("The fill character must be exactly one character long");
        int64_t width = std::min<int64_t>(a.get(0).as_int(), 1 << 24);
        return Value::string(pad(s, width, fill, name == "ljust" ? 0 : name == "rjust" ? 1 : 2));
    }
    if (name == "splitlines") return string_list(str_splitlines(s));
    if (name == "partition" || name == "rpartition") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"sep"}, 1));
        TACO_ASSIGN_OR_RETURN(std::string sep, string_arg(a, 0, name));
        if (sep.empty()) return Status::error("empty separator");
        size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (p == std::string::npos) {
            if (name == "partition") return Value::tuple({Value::string(s), Value::string(""), Value::string("")});
            return Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
        }
        return Value::tuple(
            {Value::string(s.substr(0, p)), Value::string(sep), Value::string(s.substr(p + sep.size()))});
    }
    if (name == "removeprefix" || name == "removesuffix") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, bind({"affix"}, 1));
        TACO_ASSIGN_OR_RETURN(std::string affix, string_arg(a, 0, name));
        if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0)
            return Value::string(s.substr(affix.size()));
        if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
            s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
            return Value::string(s.substr(0, s.size() - affix.size()));
        return Value::string(s);
    }
    if (name == "expandtabs") {
        std::string out;
        int64_t column = 0;
        for (char32_t cp : to_code_points(s)) {
            if (cp == '\t') {
                int64_t spaces = 8 - column % 8;
                out.append(static_cast<size_t>(spaces), ' ');
                column += spaces;
            } else {
                append_utf8(cp, out);
                column = (cp == '\n' || cp == '\r') ? 0 : column + 1;
            }
        }
        return Value::string(std::move(out));
    }
    return error("'str' object has no attribute '{}'", name);
}

bool is_dict_method(const std::string& name) {
    return name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy";
}

Result<Value> call_dict_method(const Value& dict, const std::string& name, CallArgs& call) {
    const ValueDict& d = dict.as_dict();
    if (name == "get") {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, BoundArgs::bind(call, {"key", "default"}, 1, name));
        if (const Value* v = d.find(a.get(0))) return *v;
        return a.get_or(1, Value::none());
    }
    TACO_ASSIGN_OR_RETURN(BoundArgs a, BoundArgs::bind(call, {}, 0, name));
    if (name == "copy") return Value::dict(d);
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries) {
        if (name == "items") {
            out.push_back(Value::tuple({k, v}));
        } else {
            out.push_back(name == "keys" ? k : v);
        }
    }
    return Value::dict_view(name == "items"  ? "dict_items"
                            : name == "keys" ? "dict_keys"
                                             : "dict_values",
                            std::move(out));
}

bool is_list_method(const std::string& name) { return name == "index" || name == "count" || name == "copy"; }

Result<Value> call_list_method(const Value& list, const std::string& name, CallArgs& call) {
    if (name == "copy") return Value::list(list.items());
    TACO_ASSIGN_OR_RETURN(BoundArgs a, BoundArgs::bind(call, {"value"}, 1, name));
    int64_t n = 0;
    for (size_t i = 0; i < list.items().size(); ++i) {
        if (!values_equal(list.items()[i], a.get(0))) continue;
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++n;
    }
    if (name == "index") return error("{} is not in list", a.get(0).repr());
    return Value::integer(n);
}

bool is_unsafe_method(const Value& object, const std::string& name) {
    static const std::set<std::string> kList = {"append", "extend", "insert", "pop",
                                                "remove", "clear",  "sort",   "reverse"};
    static const std::set<std::string> kDict = {"clear", "pop", "popitem", "setdefault", "update"};
    if (object.kind() == ValueKind::kList) return kList.count(name) > 0;
    if (object.is_dict()) return kDict.count(name) > 0;
    return false;
}

std::vector<size_t> slice_indices(int64_t length, const Value& start_v, const Value& stop_v, const Value& step_v,
                                  Status* status) {
    auto as_index = [&](const Value& v, bool* given) -> int64_t {
        *given = false;
        if (v.is_none()) return 0;
        if (!(v.is_int() || v.is_bool())) {
            *status = Status::error("slice indices must be integers or None");
            return 0;
        }
        *given = true;
        return v.as_int();
    };
    bool has_start, has_stop, has_step;
    int64_t start = as_index(start_v, &has_start);
    int64_t stop = as_index(stop_v, &has_stop);
    int64_t step = as_index(step_v, &has_step);
    std::vector<size_t> out;
    if (!status->is_ok()) return out;
    if (!has_step) step = 1;
    if (step == 0) {
        *status = Status::error("slice step cannot be zero");
        return out;
    }
    auto adjust = [&](int64_t i, bool given, int64_t fallback) {
        if (!given) return fallback;
        if (i < 0) i += length;
        if (step > 0) return std::clamp<int64_t>(i, 0, length);
        return std::clamp<int64_t>(i, -1, length - 1);
    };
    if (step > 0) {
        start = adjust(start, has_start, 0);
        stop = adjust(stop, has_stop, length);
        for (int64_t i = start; i < stop; i += step) out.push_back(static_cast<size_t>(i));
    } else {
        start = adjust(start, has_start, length - 1);
        stop = adjust(stop, has_stop, -1);
        for (int64_t i = start; i > stop; i += step) out.push_back(static_cast<size_t>(i));
    }
    return out;
}

}  // namespace taco::jinja
