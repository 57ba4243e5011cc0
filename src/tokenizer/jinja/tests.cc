#include "tokenizer/jinja/tests.h"

#include <set>

#include <fmt/format.h>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

const std::set<std::string>& test_names() {
    static const std::set<std::string> kNames = {
        "defined", "undefined",   "none",    "boolean",  "false",    "true",        "integer", "float",
        "number",  "string",      "mapping", "iterable", "sequence", "callable",    "sameas",  "escaped",
        "in",      "lower",       "upper",   "even",     "odd",      "divisibleby", "eq",      "equalto",
        "==",      "ne",          "!=",      "lt",       "lessthan", "<",           "le",      "<=",
        "gt",      "greaterthan", ">",       "ge",       ">=",       "filter",      "test"};
    return kNames;
}

}  // namespace

bool is_known_test(const std::string& name) { return test_names().count(name) > 0; }

Result<bool> call_test(const std::string& name, const Value& value, CallArgs& args, Evaluator& evaluator) {
    if (!is_known_test(name)) return error("no test named '{}'", name);
    auto one_arg = [&]() -> Result<Value> {
        TACO_ASSIGN_OR_RETURN(BoundArgs a, BoundArgs::bind(args, {"other"}, 1, name));
        return a.get(0);
    };
    if (name == "defined") return !value.is_undefined();
    if (name == "undefined") return value.is_undefined();
    if (name == "none") return value.is_none();
    if (name == "boolean") return value.is_bool();
    if (name == "false") return value.is_bool() && !value.as_bool();
    if (name == "true") return value.is_bool() && value.as_bool();
    if (name == "integer") return value.is_int();
    if (name == "float") return value.is_float();
    if (name == "number") return value.is_number();
    if (name == "string") return value.is_string();
    if (name == "mapping") return value.is_dict();
    if (name == "iterable") return value.is_undefined() || value.is_string() || value.is_sequence() || value.is_dict();
    if (name == "sequence") return value.is_undefined() || value.is_string() || value.is_sequence() || value.is_dict();
    if (name == "callable") return value.is_callable() || value.is_undefined();  // jinja2's Undefined is callable
    if (name == "escaped") return false;
    if (name == "lower" || name == "upper") {
        std::string s = value.str();
        bool any_cased = false;
        for (char32_t cp : to_code_points(s)) {
            if (name == "lower" ? is_python_upper(cp) : is_python_lower(cp)) return false;
            any_cased = any_cased || is_python_upper(cp) || is_python_lower(cp);
        }
        return any_cased;
    }
    if (name == "even" || name == "odd") {
        if (!value.is_number()) return error("unsupported operand type(s) for %: '{}' and 'int'", value.type_name());
        TACO_ASSIGN_OR_RETURN(Value r, binary_op("%", value, Value::integer(2), 1 << 20));
        return r.as_double() == (name == "even" ? 0.0 : 1.0);  // jinja2: value % 2 == 0 / == 1
    }
    if (name == "divisibleby") {
        TACO_ASSIGN_OR_RETURN(Value other, one_arg());
        TACO_ASSIGN_OR_RETURN(Value r, binary_op("%", value, other, 1 << 20));
        return r.as_double() == 0.0;
    }
    if (name == "sameas") {
        TACO_ASSIGN_OR_RETURN(Value other, one_arg());
        if (value.kind() != other.kind()) return false;
        if (value.is_none() || value.is_bool() || value.is_undefined()) return values_equal(value, other);
        if (value.is_int()) return value.as_int() == other.as_int() && value.as_int() >= -5 && value.as_int() <= 256;
        if (value.is_dict() || value.is_namespace()) return &value.as_dict() == &other.as_dict();
        if (value.is_sequence()) return &value.items() == &other.items();
        return false;
    }
    if (name == "in") {
        TACO_ASSIGN_OR_RETURN(Value other, one_arg());
        return contains(other, value);
    }
    if (name == "filter" || name == "test") {
        TACO_ASSIGN_OR_RETURN(Value other, one_arg());
        if (!other.is_string()) return false;
        return name == "filter" ? is_known_filter(other.as_string()) : is_known_test(other.as_string());
    }
    TACO_ASSIGN_OR_RETURN(Value other, one_arg());
    if (name == "eq" || name == "equalto" || name == "==") return values_equal(value, other);
    if (name == "ne" || name == "!=") return !values_equal(value, other);
    if (value.is_undefined()) return Status::error(value.undefined_message());
    if (name == "lt" || name == "lessthan" || name == "<") return value_less(value, other);
    if (name == "gt" || name == "greaterthan" || name == ">") return value_less(other, value);
    if (name == "le" || name == "<=") {
        TACO_ASSIGN_OR_RETURN(bool greater, value_less(other, value));
        return !greater;
    }
    TACO_ASSIGN_OR_RETURN(bool less, value_less(value, other));
    return !less;
}

}  // namespace taco::jinja
