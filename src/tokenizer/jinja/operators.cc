// Python semantics of the binary operators, `in` and iteration (declared in evaluator.h).
#include <cmath>

#include <fmt/format.h>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/string_methods.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

Status unsupported(const std::string& op, const Value& a, const Value& b) {
    return error("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

Result<Value> checked_int(bool overflow, int64_t value) {
    if (overflow) return Status::error("integer overflow (values beyond 64 bits are not supported)");
    return Value::integer(value);
}

// Python float floor division and modulo (Objects/floatobject.c float_divmod).
std::pair<double, double> float_divmod(double vx, double wx) {
    double mod = std::fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, wx);
    }
    double floordiv;
    if (div != 0.0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, vx / wx);
    }
    return {floordiv, mod};
}

Result<Value> repeat(const Value& seq, int64_t times, size_t max_bytes) {
    if (times < 0) times = 0;
    if ((seq.is_string() && seq.as_string().empty()) || (seq.is_sequence() && seq.items().empty())) times = 0;
    if (seq.is_string()) {
        if (!seq.as_string().empty() && static_cast<uint64_t>(times) > max_bytes / seq.as_string().size())
            return Status::error("string repetition too large");
        std::string out;
        out.reserve(seq.as_string().size() * static_cast<size_t>(times));
        for (int64_t i = 0; i < times; ++i) out += seq.as_string();
        return Value::string(std::move(out));
    }
    if (!seq.items().empty() && static_cast<uint64_t>(times) > (max_bytes / 16) / seq.items().size())
        return Status::error("list repetition too large");
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return seq.kind() == ValueKind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace

Result<Value> binary_op(const std::string& op, const Value& a, const Value& b, size_t max_bytes) {
    if (op == "%" && a.is_string() && b.is_undefined()) {  // str % Undefined formats it as '' (no UndefinedError)
        TACO_ASSIGN_OR_RETURN(std::string s, percent_format(a.as_string(), b));
        return Value::string(std::move(s));
    }
    if (a.is_undefined()) return Status::error(a.undefined_message());
    if (b.is_undefined()) return Status::error(b.undefined_message());
    bool numbers = a.is_number() && b.is_number();
    bool ints = numbers && !a.is_float() && !b.is_float();
    if (op == "+") {
        if (ints) {
            int64_t r = 0;
            bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
            return checked_int(overflow, r);
        }
        if (numbers) return Value::floating(a.as_double() + b.as_double());
        if (a.is_string() && b.is_string()) {
            if (a.as_string().size() + b.as_string().size() > max_bytes) return Status::error("string too long");
            return Value::string(a.as_string() + b.as_string());
        }
        if (a.is_sequence() && a.kind() == b.kind()) {
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            return a.kind() == ValueKind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
        }
        if (a.is_string()) return error("can only concatenate str (not \"{}\") to str", b.type_name());
        if (a.is_sequence())
            return error("can only concatenate {} (not \"{}\") to {}", a.type_name(), b.type_name(), a.type_name());
        return unsupported("+", a, b);
    }
    if (op == "-") {
        if (ints) {
            int64_t r = 0;
            bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
            return checked_int(overflow, r);
        }
        if (numbers) return Value::floating(a.as_double() - b.as_double());
        return unsupported("-", a, b);
    }
    if (op == "*") {
        if (ints) {
            int64_t r = 0;
            bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
            return checked_int(overflow, r);
        }
        if (numbers) return Value::floating(a.as_double() * b.as_double());
        if ((a.is_string() || a.is_sequence()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), max_bytes);
        if ((b.is_string() || b.is_sequence()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), max_bytes);
        return unsupported("*", a, b);
    }
    if (op == "/") {
        if (!numbers) return unsupported("/", a, b);
        if (b.as_double() == 0.0) return Status::error("division by zero");
        return Value::floating(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
        if (a.is_string() && op == "%") {
            TACO_ASSIGN_OR_RETURN(std::string s, percent_format(a.as_string(), b));
            return Value::string(std::move(s));
        }
        if (!numbers) return unsupported(op, a, b);
        if (ints) {
            int64_t x = a.as_int(), y = b.as_int();
            if (y == 0)
                return Status::error(op == "//" ? "integer division or modulo by zero" : "integer modulo by zero");
            if (x == INT64_MIN && y == -1) return Status::error("integer overflow");
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) {
                q -= 1;
                r += y;
            }
            return Value::integer(op == "//" ? q : r);
        }
        if (b.as_double() == 0.0) return Status::error("float divmod()");
        auto [q, r] = float_divmod(a.as_double(), b.as_double());
        return Value::floating(op == "//" ? q : r);
    }
    if (op == "**") {
        if (!numbers) return unsupported("** or pow()", a, b);
        if (ints && b.as_int() >= 0) {
            int64_t base = a.as_int(), result = 1;
            for (int64_t e = b.as_int(); e > 0; --e) {
                if (__builtin_mul_overflow(result, base, &result)) return checked_int(true, 0);
                if (result == 0 || result == 1) break;
                if (result == -1) {
                    result = (e - 1) % 2 == 0 ? -1 : 1;
                    break;
                }
            }
            return Value::integer(result);
        }
        if (a.as_double() == 0.0 && b.as_double() < 0) return Status::error("0.0 cannot be raised to a negative power");
        return Value::floating(std::pow(a.as_double(), b.as_double()));
    }
    return error("unknown operator {}", op);
}

Result<bool> contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case ValueKind::kUndefined: return false;
        case ValueKind::kString:
            if (!item.is_string())
                return error("'in <string>' requires string as left operand, not {}", item.type_name());
            return container.as_string().find(item.as_string()) != std::string::npos;
        case ValueKind::kList:
        case ValueKind::kTuple:
            for (const Value& v : container.items())
                if (values_equal(v, item)) return true;
            return false;
        case ValueKind::kDict:
            if (item.kind() == ValueKind::kList || item.is_dict() || item.is_namespace())
                return error("unhashable type: '{}'", item.type_name());
            return container.as_dict().find(item) != nullptr;
        default: return error("argument of type '{}' is not iterable", container.type_name());
    }
}

Result<std::vector<Value>> iterate(const Value& value) {
    switch (value.kind()) {
        case ValueKind::kUndefined: return std::vector<Value>{};
        case ValueKind::kList:
        case ValueKind::kTuple: return value.items();
        case ValueKind::kDict: {
            std::vector<Value> keys;
            for (const auto& [k, v] : value.as_dict().entries) keys.push_back(k);
            return keys;
        }
        case ValueKind::kString: {
            std::vector<Value> chars;
            for (char32_t cp : to_code_points(value.as_string())) {
                std::string s;
                append_utf8(cp, s);
                chars.push_back(Value::string(std::move(s)));
            }
            return chars;
        }
        default: return error("'{}' object is not iterable", value.type_name());
    }
}

}  // namespace taco::jinja
