// Value: what a Jinja expression evaluates to, modelled on the Python objects jinja2 handles inside a chat
// template (None, bool, int, float, str, list, tuple, dict, namespace, callables) plus jinja2's Undefined.
// Containers are shared by reference like Python objects (a namespace set in a loop is seen after it); lists
// and dicts are never mutated once built, as in transformers' ImmutableSandboxedEnvironment.
// Printing follows Python's str()/repr() and JSON follows json.dumps, so renders are byte-identical.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "core/status.h"

namespace taco::jinja {

class Value;
class Evaluator;

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Result<Value>(CallArgs& args, Evaluator& evaluator)>;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kNamespace, kCallable };

struct ValueDict;

class Value {
public:
    Value() = default;  // undefined
    static Value undefined(std::string name = "", std::string hint = "");
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value floating(double f);
    static Value string(std::string s);
    static Value list(std::vector<Value> items);
    // A list that prints as dict.keys()/values()/items() do: "dict_keys(['a'])".
    static Value dict_view(const char* view_name, std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    static Value dict(ValueDict d);
    static Value make_namespace(ValueDict d);
    static Value callable(std::string name, NativeFunction fn);
    // Precondition: j nests at most kMaxJsonInputDepth levels (check with json_depth_within first).
    static Value from_json(const nlohmann::ordered_json& j);

    ValueKind kind() const { return kind_; }
    // Nesting height: 1 for scalars and namespaces, 1 + deepest item for lists, tuples and dicts.
    int depth() const { return depth_; }
    // Whether this value is or contains a namespace (namespaces may not nest: no reference cycles).
    bool contains_namespace() const;
    bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
    bool is_none() const { return kind_ == ValueKind::kNone; }
    bool is_bool() const { return kind_ == ValueKind::kBool; }
    bool is_int() const { return kind_ == ValueKind::kInt; }
    bool is_float() const { return kind_ == ValueKind::kFloat; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
    bool is_string() const { return kind_ == ValueKind::kString; }
    bool is_sequence() const { return kind_ == ValueKind::kList || kind_ == ValueKind::kTuple; }
    bool is_dict() const { return kind_ == ValueKind::kDict; }
    bool is_namespace() const { return kind_ == ValueKind::kNamespace; }
    bool is_callable() const { return kind_ == ValueKind::kCallable; }

    bool as_bool() const { return b_; }
    int64_t as_int() const { return is_bool() ? (b_ ? 1 : 0) : i_; }
    double as_double() const { return is_float() ? f_ : static_cast<double>(as_int()); }
    const std::string& as_string() const { return *s_; }
    const std::vector<Value>& items() const { return *list_; }
    const ValueDict& as_dict() const { return *dict_; }
    ValueDict& namespace_dict() const { return *dict_; }  // namespaces are the one mutable container
    const std::string& callable_name() const;
    Result<Value> call(CallArgs& args, Evaluator& evaluator) const;

    // For undefined values: for a sandbox refusal, the message to raise when used.
    const std::string& undefined_hint() const { return hint_ ? *hint_ : empty_string(); }
    // "'x' is undefined" (or the hint), as jinja2's UndefinedError says.
    std::string undefined_message() const;

    bool truthy() const;
    // Python str() (undefined -> "") and repr(). A text longer than kMaxPrintBytes throws std::length_error, which
    // Template::render turns into a Status (a list repeated by reference can otherwise print terabytes).
    std::string str() const;
    std::string repr() const;
    std::string type_name() const;  // Python type name for error messages: 'str', 'int', 'dict', ...

    // json.dumps(value, ensure_ascii=False, indent, separators, sort_keys); indent < 0 means None.
    struct JsonOptions {
        int indent = -1;
        std::string indent_string;  // used when indent_is_string
        bool indent_is_string = false;
        std::string item_separator;  // defaults resolved by the caller: ", " or "," with indent
        std::string key_separator = ": ";
        bool sort_keys = false;
        bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
    };
    Result<std::string> to_json(const JsonOptions& options) const;

private:
    static const std::string& empty_string();
    Status dump_json(const JsonOptions& options, int depth, std::string& out) const;
    void append_repr(std::string& out) const;

    void compute_depth();

    ValueKind kind_ = ValueKind::kUndefined;
    int depth_ = 1;
    const char* view_name_ = nullptr;  // dict view lists: "dict_keys", "dict_values", "dict_items"
    bool b_ = false;
    int64_t i_ = 0;
    double f_ = 0.0;
    std::shared_ptr<const std::string> s_;     // string value, or undefined name
    std::shared_ptr<const std::string> hint_;  // undefined: sandbox message
    std::shared_ptr<const std::vector<Value>> list_;
    std::shared_ptr<ValueDict> dict_;
    std::shared_ptr<const std::pair<std::string, NativeFunction>> callable_;
};

// Insertion-ordered mapping (Python dicts keep insertion order). Lookups are linear: template dicts are small.
struct ValueDict {
    std::vector<std::pair<Value, Value>> entries;

    const Value* find(const Value& key) const;
    const Value* find(const std::string& key) const;
    void set(const Value& key, Value value);  // replaces in place or appends
};

// While one lives on a thread, every list (tuple, dict view) and string built there is charged to a budget: a
// list longer than max_list_items, or more than max_built_items items / max_built_bytes string bytes built in all,
// throws std::length_error, which Template::render turns into a Status. Without one only the per-list cap holds.
class RenderBudgetScope {
public:
    RenderBudgetScope(size_t max_list_items, int64_t max_built_items, int64_t max_built_bytes);
    ~RenderBudgetScope();
    RenderBudgetScope(const RenderBudgetScope&) = delete;
    RenderBudgetScope& operator=(const RenderBudgetScope&) = delete;
};

constexpr int kMaxJsonInputDepth = limits::kMaxTemplateValueDepth;
constexpr size_t kMaxPrintBytes = size_t{64} << 20;
// Whether j nests at most max_depth levels of arrays/objects.
bool json_depth_within(const nlohmann::ordered_json& j, int max_depth);

// Python ==, with int/float/bool compared numerically and containers element-wise.
bool values_equal(const Value& a, const Value& b);
// Python <; an error for unorderable types ("'<' not supported between instances of 'str' and 'int'").
Result<bool> value_less(const Value& a, const Value& b);

// Python float repr: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string python_float_repr(double f);
// Python repr of a str: quotes chosen as Python does, escapes for unprintable characters.
std::string python_string_repr(const std::string& s);

}  // namespace taco::jinja
