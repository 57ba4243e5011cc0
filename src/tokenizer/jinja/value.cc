#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/limits.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

constexpr int kMaxJsonDepth = 512;

}  // namespace

const std::string& Value::empty_string() {
    static const std::string kEmpty;
    return kEmpty;
}

Value Value::undefined(std::string name, std::string hint) {
    Value v;
    v.s_ = std::make_shared<const std::string>(std::move(name));
    if (!hint.empty()) v.hint_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}

Value Value::none() {
    Value v;
    v.kind_ = ValueKind::kNone;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = ValueKind::kBool;
    v.b_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = ValueKind::kInt;
    v.i_ = i;
    return v;
}

Value Value::floating(double f) {
    Value v;
    v.kind_ = ValueKind::kFloat;
    v.f_ = f;
    return v;
}

namespace {

// The budget of the render running on this thread (RenderBudgetScope); inactive outside a render.
struct BuildBudget {
    bool active = false;
    size_t max_list_items = limits::kMaxTemplateListItems;
    int64_t items_left = 0;
    int64_t bytes_left = 0;
};
thread_local BuildBudget build_budget;

void charge_string(size_t bytes) {
    if (!build_budget.active) return;
    build_budget.bytes_left -= int64_t(bytes);
    if (build_budget.bytes_left < 0)
        throw std::length_error(
            fmt::format("the template built more than {} bytes of strings (limits::"
                        "kMaxTemplateBuiltBytes)",
                        limits::kMaxTemplateBuiltBytes));
}

void charge_list(size_t items) {
    if (items > build_budget.max_list_items)
        throw std::length_error(
            fmt::format("a template list of {} items is longer than the limit of {} "
                        "(limits::kMaxTemplateListItems)",
                        items, build_budget.max_list_items));
    if (!build_budget.active) return;
    build_budget.items_left -= int64_t(items);
    if (build_budget.items_left < 0)
        throw std::length_error(
            fmt::format("the template built more than {} list items (limits::"
                        "kMaxTemplateBuiltItems)",
                        limits::kMaxTemplateBuiltItems));
}

}  // namespace

RenderBudgetScope::RenderBudgetScope(size_t max_list_items, int64_t max_built_items, int64_t max_built_bytes) {
    build_budget = BuildBudget{true, max_list_items, max_built_items, max_built_bytes};
}

RenderBudgetScope::~RenderBudgetScope() { build_budget = BuildBudget{}; }

Value Value::string(std::string s) {
    charge_string(s.size());
    Value v;
    v.kind_ = ValueKind::kString;
    v.s_ = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items) {
    charge_list(items.size());
    Value v;
    v.kind_ = ValueKind::kList;
    v.list_ = std::make_shared<const std::vector<Value>>(std::move(items));
    v.compute_depth();
    return v;
}

Value Value::dict_view(const char* view_name, std::vector<Value> items) {
    Value v = list(std::move(items));
    v.view_name_ = view_name;
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.kind_ = ValueKind::kTuple;
    return v;
}

Value Value::dict(ValueDict d) {
    charge_list(d.entries.size());
    Value v;
    v.kind_ = ValueKind::kDict;
    v.dict_ = std::make_shared<ValueDict>(std::move(d));
    v.compute_depth();
    return v;
}

Value Value::make_namespace(ValueDict d) {
    Value v = dict(std::move(d));
    v.kind_ = ValueKind::kNamespace;
    v.depth_ = 1;
    return v;
}

void Value::compute_depth() {
    int deepest = 0;
    if (list_)
        for (const Value& item : *list_) deepest = std::max(deepest, item.depth_);
    if (dict_)
        for (const auto& [k, item] : dict_->entries) deepest = std::max({deepest, k.depth_, item.depth_});
    depth_ = deepest + 1;
}

bool Value::contains_namespace() const {
    if (is_namespace()) return true;
    if (is_sequence())
        for (const Value& item : *list_)
            if (item.contains_namespace()) return true;
    if (is_dict())
        for (const auto& [k, item] : dict_->entries)
            if (item.contains_namespace()) return true;
    return false;
}

bool json_depth_within(const nlohmann::ordered_json& j, int max_depth) {
    if (!j.is_array() && !j.is_object()) return true;
    if (max_depth <= 0) return false;
    for (const auto& item : j)
        if (!json_depth_within(item, max_depth - 1)) return false;
    return true;
}

Value Value::callable(std::string name, NativeFunction fn) {
    Value v;
    v.kind_ = ValueKind::kCallable;
    v.callable_ = std::make_shared<const std::pair<std::string, NativeFunction>>(std::move(name), std::move(fn));
    return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
    using Type = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case Type::null:
        case Type::discarded: return none();
        case Type::boolean: return boolean(j.get<bool>());
        case Type::number_integer: return integer(j.get<int64_t>());
        case Type::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return floating(static_cast<double>(u));
            return integer(static_cast<int64_t>(u));
        }
        case Type::number_float: return floating(j.get<double>());
        case Type::string: return string(j.get<std::string>());
        case Type::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& e : j) items.push_back(from_json(e));
            return list(std::move(items));
        }
        case Type::object: {
            ValueDict d;
            d.entries.reserve(j.size());
            for (const auto& [k, e] : j.items()) d.entries.emplace_back(string(k), from_json(e));
            return dict(std::move(d));
        }
        case Type::binary: return none();
    }
    return none();
}

const std::string& Value::callable_name() const { return callable_->first; }

Result<Value> Value::call(CallArgs& args, Evaluator& evaluator) const {
    if (is_undefined()) return Status::error(undefined_message());
    if (!is_callable()) return error("'{}' object is not callable", type_name());
    return callable_->second(args, evaluator);
}

std::string Value::undefined_message() const {
    if (hint_) return *hint_;
    if (s_ && !s_->empty()) return fmt::format("'{}' is undefined", *s_);
    return "value is undefined";
}

bool Value::truthy() const {
    switch (kind_) {
        case ValueKind::kUndefined:
        case ValueKind::kNone: return false;
        case ValueKind::kBool: return b_;
        case ValueKind::kInt: return i_ != 0;
        case ValueKind::kFloat: return f_ != 0.0;
        case ValueKind::kString: return !s_->empty();
        case ValueKind::kList:
        case ValueKind::kTuple: return !list_->empty();
        case ValueKind::kDict: return !dict_->entries.empty();
        case ValueKind::kNamespace:
        case ValueKind::kCallable: return true;
    }
    return false;
}

std::string Value::type_name() const {
    switch (kind_) {
        case ValueKind::kUndefined: return "Undefined";
        case ValueKind::kNone: return "NoneType";
        case ValueKind::kBool: return "bool";
        case ValueKind::kInt: return "int";
        case ValueKind::kFloat: return "float";
        case ValueKind::kString: return "str";
        case ValueKind::kList: return "list";
        case ValueKind::kTuple: return "tuple";
        case ValueKind::kDict: return "dict";
        case ValueKind::kNamespace: return "Namespace";
        case ValueKind::kCallable: return "function";
    }
    return "object";
}

std::string python_float_repr(double f) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    size_t e_pos = sci.find('e');
    std::string mantissa = sci.substr(0, e_pos);
    int exponent = std::stoi(sci.substr(e_pos + 1));
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits.push_back(c);
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    int decpt = exponent + 1;
    int ndigits = static_cast<int>(digits.size());
    std::string out = sign;
    if (decpt <= -4 || decpt > 16) {
        out += digits.substr(0, 1);
        if (ndigits > 1) out += "." + digits.substr(1);
        out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
    } else if (decpt <= 0) {
        out += "0." + std::string(-decpt, '0') + digits;
    } else if (decpt >= ndigits) {
        out += digits + std::string(decpt - ndigits, '0') + ".0";
    } else {
        out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return out;
}

std::string python_string_repr(const std::string& s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    out.reserve(s.size() + 2);
    for (size_t pos = 0; pos < s.size();) {
        size_t run = pos;  // printable ASCII needing no escape, copied in one go
        while (run < s.size() && s[run] >= 0x20 && s[run] < 0x7F && s[run] != '\\' && s[run] != quote) ++run;
        if (run > pos) {
            out.append(s, pos, run - pos);
            pos = run;
            continue;
        }
        size_t len = 1;
        char32_t cp = decode_utf8(s, pos, &len);
        if (cp == '\\') {
            out += "\\\\";
        } else if (cp == static_cast<char32_t>(quote)) {
            out += '\\';
            out += quote;
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (is_python_printable(cp)) {
            out.append(s, pos, len);
        } else if (cp < 0x100) {
            out += fmt::format("\\x{:02x}", static_cast<uint32_t>(cp));
        } else if (cp < 0x10000) {
            out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
        } else {
            out += fmt::format("\\U{:08x}", static_cast<uint32_t>(cp));
        }
        pos += len;
    }
    out += quote;
    return out;
}

std::string Value::str() const {
    switch (kind_) {
        case ValueKind::kUndefined: return "";
        case ValueKind::kString: return *s_;
        default: return repr();
    }
}

std::string Value::repr() const {
    std::string out;
    append_repr(out);
    return out;
}

void Value::append_repr(std::string& out) const {
    if (out.size() > kMaxPrintBytes) throw std::length_error("value too large to print");
    switch (kind_) {
        case ValueKind::kUndefined: out += "Undefined"; return;
        case ValueKind::kNone: out += "None"; return;
        case ValueKind::kBool: out += b_ ? "True" : "False"; return;
        case ValueKind::kInt: out += std::to_string(i_); return;
        case ValueKind::kFloat: out += python_float_repr(f_); return;
        case ValueKind::kString:
            if (s_->size() > kMaxPrintBytes) throw std::length_error("value too large to print");
            out += python_string_repr(*s_);
            return;
        case ValueKind::kList:
        case ValueKind::kTuple: {
            bool tuple = kind_ == ValueKind::kTuple;
            if (view_name_) out += std::string(view_name_) + "(";
            out += tuple ? "(" : "[";
            for (size_t i = 0; i < list_->size(); ++i) {
                if (i) out += ", ";
                (*list_)[i].append_repr(out);
            }
            if (tuple && list_->size() == 1) out += ",";
            out += tuple ? ")" : "]";
            if (view_name_) out += ")";
            return;
        }
        case ValueKind::kDict:
        case ValueKind::kNamespace: {
            out += kind_ == ValueKind::kNamespace ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& [k, v] : dict_->entries) {
                if (!first) out += ", ";
                first = false;
                k.append_repr(out);
                out += ": ";
                v.append_repr(out);
            }
            out += kind_ == ValueKind::kNamespace ? "}>" : "}";
            return;
        }
        case ValueKind::kCallable: out += fmt::format("<function {}>", callable_->first); return;
    }
}

namespace {

void append_json_string(const std::string& s, bool ensure_ascii, std::string& out) {
    out += '"';
    for (size_t pos = 0; pos < s.size(); ++pos) {
        char ch = s[pos];
        unsigned char c = static_cast<unsigned char>(ch);
        if (ensure_ascii && c >= 0x80) {
            size_t len = 1;
            char32_t cp = decode_utf8(s, pos, &len);
            pos += len - 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    out += fmt::format("\\u{:04x}", c);
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

std::string json_float(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return python_float_repr(f);
}

}  // namespace

Result<std::string> Value::to_json(const JsonOptions& options) const {
    std::string out;
    TACO_RETURN_IF_ERROR(dump_json(options, 0, out));
    return out;
}

Status Value::dump_json(const JsonOptions& options, int depth, std::string& out) const {
    if (depth > kMaxJsonDepth) return Status::error("tojson: nesting too deep");
    if (out.size() > kMaxPrintBytes) return Status::error("tojson: output too large");
    bool indented = options.indent >= 0 || options.indent_is_string;
    auto newline = [&](int level) {
        if (!indented) return;
        out += '\n';
        for (int i = 0; i < level; ++i) {
            if (options.indent_is_string) {
                out += options.indent_string;
            } else {
                out.append(static_cast<size_t>(options.indent), ' ');
            }
        }
    };
    switch (kind_) {
        case ValueKind::kUndefined: return Status::error("Object of type Undefined is not JSON serializable");
        case ValueKind::kNamespace: return Status::error("Object of type Namespace is not JSON serializable");
        case ValueKind::kCallable: return Status::error("Object of type function is not JSON serializable");
        case ValueKind::kNone: out += "null"; return Status::ok();
        case ValueKind::kBool: out += b_ ? "true" : "false"; return Status::ok();
        case ValueKind::kInt: out += std::to_string(i_); return Status::ok();
        case ValueKind::kFloat: out += json_float(f_); return Status::ok();
        case ValueKind::kString: append_json_string(*s_, options.ensure_ascii, out); return Status::ok();
        case ValueKind::kList:
        case ValueKind::kTuple: {
            if (list_->empty()) {
                out += "[]";
                return Status::ok();
            }
            out += '[';
            newline(depth + 1);
            for (size_t i = 0; i < list_->size(); ++i) {
                if (i) {
                    out += options.item_separator;
                    newline(depth + 1);
                }
                TACO_RETURN_IF_ERROR((*list_)[i].dump_json(options, depth + 1, out));
            }
            newline(depth);
            out += ']';
            return Status::ok();
        }
        case ValueKind::kDict: {
            if (dict_->entries.empty()) {
                out += "{}";
                return Status::ok();
            }
            std::vector<const std::pair<Value, Value>*> entries;
            for (const auto& e : dict_->entries) entries.push_back(&e);
            if (options.sort_keys) {
                Status sort_status;
                std::stable_sort(entries.begin(), entries.end(), [&](const auto* a, const auto* b) {
                    auto less = value_less(a->first, b->first);
                    if (!less.is_ok()) {
                        sort_status = less.status();
                        return false;
                    }
                    return *less;
                });
                TACO_RETURN_IF_ERROR(sort_status);
            }
            out += '{';
            newline(depth + 1);
            bool first = true;
            for (const auto* entry : entries) {
                if (!first) {
                    out += options.item_separator;
                    newline(depth + 1);
                }
                first = false;
                const Value& key = entry->first;
                switch (key.kind_) {
                    case ValueKind::kString: append_json_string(*key.s_, options.ensure_ascii, out); break;
                    case ValueKind::kInt: out += '"' + std::to_string(key.i_) + '"'; break;
                    case ValueKind::kFloat: out += '"' + json_float(key.f_) + '"'; break;
                    case ValueKind::kBool: out += key.b_ ? "\"true\"" : "\"false\""; break;
                    case ValueKind::kNone: out += "\"null\""; break;
                    default: return error("keys must be str, int, float, bool or None, not {}", key.type_name());
                }
                out += options.key_separator;
                TACO_RETURN_IF_ERROR(entry->second.dump_json(options, depth + 1, out));
            }
            newline(depth);
            out += '}';
            return Status::ok();
        }
    }
    return Status::ok();
}

const Value* ValueDict::find(const Value& key) const {
    for (const auto& [k, v] : entries)
        if (values_equal(k, key)) return &v;
    return nullptr;
}

const Value* ValueDict::find(const std::string& key) const {
    for (const auto& [k, v] : entries)
        if (k.is_string() && k.as_string() == key) return &v;
    return nullptr;
}

void ValueDict::set(const Value& key, Value value) {
    for (auto& [k, v] : entries) {
        if (values_equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(key, std::move(value));
}

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::kUndefined:
        case ValueKind::kNone: return true;
        case ValueKind::kString: return a.as_string() == b.as_string();
        case ValueKind::kList:
        case ValueKind::kTuple: {
            if (a.items().size() != b.items().size()) return false;
            for (size_t i = 0; i < a.items().size(); ++i)
                if (!values_equal(a.items()[i], b.items()[i])) return false;
            return true;
        }
        case ValueKind::kDict: {
            if (a.as_dict().entries.size() != b.as_dict().entries.size()) return false;
            for (const auto& [k, v] : a.as_dict().entries) {
                const Value* other = b.as_dict().find(k);
                if (!other || !values_equal(v, *other)) return false;
            }
            return true;
        }
        case ValueKind::kNamespace: return &a.namespace_dict() == &b.namespace_dict();
        case ValueKind::kCallable: return a.callable_name() == b.callable_name();
        case ValueKind::kBool:
        case ValueKind::kInt:
        case ValueKind::kFloat: return false;  // handled above
    }
    return false;
}

Result<bool> value_less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = code point order
    if (a.kind() == b.kind() && a.is_sequence()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_equal(x[i], y[i])) continue;
            return value_less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    return error("'<' not supported between instances of '{}' and '{}'", a.type_name(), b.type_name());
}

}  // namespace taco::jinja
