// Python's two string formatting mini-languages, for the conversions templates use (declared in
// string_methods.h): "%s %d %.2f" % args and "{} {0} {name}".format(...).
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "tokenizer/jinja/string_methods.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

Result<std::string> format_one(const Value& v, char conv, const std::string& flags, int width, int precision) {
    std::string body;
    bool numeric = false;
    switch (conv) {
        case 's':
            body = v.str();
            if (precision >= 0)
                body = from_code_points([&] {
                    auto cps = to_code_points(body);
                    if (static_cast<int>(cps.size()) > precision) cps.resize(static_cast<size_t>(precision));
                    return cps;
                }());
            break;
        case 'r': body = v.repr(); break;
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o': {
            if (!v.is_number()) return error("%{} format: a real number is required, not {}", conv, v.type_name());
            int64_t i = v.is_float() ? static_cast<int64_t>(std::trunc(v.as_double())) : v.as_int();
            body = conv == 'x'   ? fmt::format("{:x}", i)
                   : conv == 'X' ? fmt::format("{:X}", i)
                   : conv == 'o' ? fmt::format("{:o}", i)
                                 : std::to_string(i);
            if (i >= 0 && flags.find('+') != std::string::npos) body = "+" + body;
            numeric = true;
            break;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
            if (!v.is_number()) return error("must be real number, not {}", v.type_name());
            int p = precision < 0 ? 6 : precision;
            std::string spec = fmt::format("%{}.{}{}", flags.find('+') != std::string::npos ? "+" : "", p, conv);
            char buf[512];
            std::snprintf(buf, sizeof(buf), spec.c_str(), v.as_double());
            body = buf;
            numeric = true;
            break;
        }
        case 'c':
            if (v.is_string()) {
                body = v.as_string();
            } else {
                append_utf8(static_cast<char32_t>(v.as_int()), body);
            }
            break;
        default: return error("unsupported format character '{}'", std::string(1, conv));
    }
    int len = static_cast<int>(code_point_count(body));
    if (width > len) {
        if (flags.find('-') != std::string::npos) {
            body += std::string(static_cast<size_t>(width - len), ' ');
        } else if (numeric && flags.find('0') != std::string::npos) {
            size_t sign = (!body.empty() && (body[0] == '-' || body[0] == '+')) ? 1 : 0;
            body.insert(sign, std::string(static_cast<size_t>(width - len), '0'));
        } else {
            body = std::string(static_cast<size_t>(width - len), ' ') + body;
        }
    }
    return body;
}

// Python's format-spec mini-language: [[fill]align][sign][0][width][,][.precision][type] for s d f e g % x o b.
Result<std::string> apply_format_spec(const Value& v, const std::string& spec) {
    if (spec.empty()) return v.str();
    std::vector<char32_t> cps = to_code_points(spec);
    size_t i = 0;
    std::string fill = " ";
    char align = '\0';
    auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (cps.size() >= 2 && is_align(cps[1])) {
        fill.clear();
        append_utf8(cps[0], fill);
        align = static_cast<char>(cps[1]);
        i = 2;
    } else if (!cps.empty() && is_align(cps[0])) {
        align = static_cast<char>(cps[0]);
        i = 1;
    }
    char sign = '-';
    if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) sign = static_cast<char>(cps[i++]);
    if (i < cps.size() && cps[i] == '0') {
        if (!align) {
            fill = "0";
            align = '=';
        }
        ++i;
    }
    int width = 0;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9')
        width = std::min(width * 10 + static_cast<int>(cps[i++] - '0'), 100000);
    bool grouping = false;
    if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) {
        grouping = true;
        ++i;
    }
    int precision = -1;
    if (i < cps.size() && cps[i] == '.') {
        precision = 0;
        ++i;
        while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9')
            precision = std::min(precision * 10 + static_cast<int>(cps[i++] - '0'), 400);
    }
    char type = i < cps.size() ? static_cast<char>(cps[i++]) : '\0';
    if (i != cps.size() || grouping) return error("unsupported format spec '{}'", spec);
    std::string body;
    bool numeric = v.is_number();
    if (v.is_string() || (!numeric && (type == '\0' || type == 's'))) {
        if (type != '\0' && type != 's')
            return error("Unknown format code '{}' for object of type 'str'", std::string(1, type));
        if (sign != '-' || align == '=') return Status::error("Sign not allowed in string format specifier");
        body = v.str();
        if (precision >= 0) {
            auto b = to_code_points(body);
            if (static_cast<int>(b.size()) > precision) b.resize(static_cast<size_t>(precision));
            body = from_code_points(b);
        }
        numeric = false;
    } else if (!numeric) {
        return error("unsupported format string passed to {}.__format__", v.type_name());
    } else if (type == '\0' && !v.is_float() && precision < 0) {
        body = std::to_string(v.as_int());
    } else if (type == '\0' && v.is_float() && precision < 0) {
        body = v.repr();
    } else {
        if (type == '\0') type = 'g';
        if ((type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b') && v.is_float())
            return error("Unknown format code '{}' for object of type 'float'", std::string(1, type));
        int64_t iv = v.as_int();
        switch (type) {
            case 'd': body = std::to_string(iv); break;
            case 'x': body = fmt::format("{:x}", iv); break;
            case 'X': body = fmt::format("{:X}", iv); break;
            case 'o': body = fmt::format("{:o}", iv); break;
            case 'b': body = fmt::format("{:b}", iv); break;
            case 'f':
            case 'F':
            case 'e':
            case 'E':
            case 'g':
            case 'G':
            case '%': {
                double d = v.as_double() * (type == '%' ? 100.0 : 1.0);
                char conv = type == '%' ? 'f' : type;
                std::string f = fmt::format("%.{}{}", precision < 0 ? 6 : precision, conv);
                char buf[512];
                std::snprintf(buf, sizeof(buf), f.c_str(), d);
                body = buf;
                if (type == '%') body += '%';
                break;
            }
            default: return error("Unknown format code '{}'", std::string(1, type));
        }
    }
    if (numeric && sign != '-' && !body.empty() && body[0] != '-') body = std::string(1, sign) + body;
    if (!align) align = numeric ? '>' : '<';
    int len = static_cast<int>(code_point_count(body));
    if (width <= len) return body;
    int pad = width - len;
    auto repeat = [&](int n) {
        std::string r;
        for (int k = 0; k < n; ++k) r += fill;
        return r;
    };
    switch (align) {
        case '<': return body + repeat(pad);
        case '>': return repeat(pad) + body;
        case '^': return repeat(pad / 2) + body + repeat(pad - pad / 2);
        default: {
            size_t sign_len = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
            return body.substr(0, sign_len) + repeat(pad) + body.substr(sign_len);
        }
    }
}

}  // namespace

Result<std::string> percent_format(const std::string& fmt, const Value& args) {
    std::vector<Value> positional;
    const Value* mapping = nullptr;
    if (args.kind() == ValueKind::kTuple) {
        positional = args.items();
    } else if (args.is_dict()) {
        mapping = &args;
        positional.push_back(args);
    } else {
        positional.push_back(args);
    }
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) return Status::error("incomplete format");
        if (fmt[i] == '%') {
            out += '%';
            continue;
        }
        const Value* value = nullptr;
        Value named;
        if (fmt[i] == '(') {
            size_t close = fmt.find(')', i);
            if (close == std::string::npos) return Status::error("incomplete format key");
            if (!mapping) return Status::error("format requires a mapping");
            const Value* found = mapping->as_dict().find(fmt.substr(i + 1, close - i - 1));
            if (!found) return error("KeyError: '{}'", fmt.substr(i + 1, close - i - 1));
            named = *found;
            value = &named;
            i = close + 1;
        }
        std::string flags;
        while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
        int width = 0, precision = -1;
        while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
            width = std::min(width * 10 + (fmt[i++] - '0'), 100000);
        if (i < fmt.size() && fmt[i] == '.') {
            precision = 0;
            ++i;
            while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])))
                precision = std::min(precision * 10 + (fmt[i++] - '0'), 400);
        }
        if (i >= fmt.size()) return Status::error("incomplete format");
        if (!value) {
            if (next >= positional.size()) return Status::error("not enough arguments for format string");
            value = &positional[next++];
        }
        TACO_ASSIGN_OR_RETURN(std::string piece, format_one(*value, fmt[i], flags, width, precision));
        out += piece;
    }
    // Python skips this check when the argument is a non-tuple mapping or sequence (PyMapping_Check).
    bool mapping_like = args.is_dict() || args.kind() == ValueKind::kList || args.is_undefined();
    if (!mapping_like && next < positional.size())
        return Status::error("not all arguments converted during string formatting");
    return out;
}

Result<std::string> brace_format(const std::string& fmt, const CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out += '}';
                ++i;
                continue;
            }
            return Status::error("Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        size_t close = fmt.find('}', i);
        if (close == std::string::npos) return Status::error("Single '{' encountered in format string");
        std::string field = fmt.substr(i + 1, close - i - 1);
        i = close;
        char conversion = '\0';
        std::string spec;
        size_t colon = field.find(':');
        if (colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field = field.substr(0, colon);
        }
        size_t bang = field.find('!');
        if (bang != std::string::npos) {
            conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
            field = field.substr(0, bang);
        }
        const Value* value = nullptr;
        if (field.empty()) {
            if (auto_index >= args.positional.size()) return Status::error("Replacement index out of range");
            value = &args.positional[auto_index++];
        } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            size_t index = std::strtoul(field.c_str(), nullptr, 10);
            if (index >= args.positional.size()) return Status::error("Replacement index out of range");
            value = &args.positional[index];
        } else {
            for (const auto& [k, v] : args.keyword)
                if (k == field) value = &v;
            if (!value) return error("KeyError: '{}'", field);
        }
        Value converted = conversion == 'r'   ? Value::string(value->repr())
                          : conversion == 's' ? Value::string(value->str())
                                              : *value;
        TACO_ASSIGN_OR_RETURN(std::string piece, apply_format_spec(converted, spec));
        out += piece;
    }
    return out;
}

}  // namespace taco::jinja
