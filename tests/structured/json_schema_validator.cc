#include "json_schema_validator.h"

#include <cmath>
#include <regex>
#include <set>

namespace taco::structured::testing {
namespace {

using ojson = nlohmann::ordered_json;

int64_t codepoints(const std::string& s) {
    int64_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

bool digits(const std::string& s, size_t at, size_t n) {
    if (at + n > s.size()) return false;
    for (size_t i = at; i < at + n; ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

bool valid_date(const std::string& s) {
    if (s.size() != 10 || !digits(s, 0, 4) || s[4] != '-' || !digits(s, 5, 2) || s[7] != '-' || !digits(s, 8, 2))
        return false;
    const int year = std::stoi(s.substr(0, 4)), month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
    static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1]) return false;
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return !(month == 2 && day == 29 && !leap);
}

bool valid_time(const std::string& s) {
    if (s.size() < 9 || !digits(s, 0, 2) || s[2] != ':' || !digits(s, 3, 2) || s[5] != ':' || !digits(s, 6, 2))
        return false;
    if (std::stoi(s.substr(0, 2)) > 23 || std::stoi(s.substr(3, 2)) > 59 || std::stoi(s.substr(6, 2)) > 59)
        return false;
    size_t i = 8;
    if (i < s.size() && s[i] == '.') {
        ++i;
        const size_t start = i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        if (i == start) return false;
    }
    if (i < s.size() && s[i] == 'Z') return i + 1 == s.size();
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        return s.size() == i + 6 && digits(s, i + 1, 2) && s[i + 3] == ':' && digits(s, i + 4, 2) &&
               std::stoi(s.substr(i + 1, 2)) <= 23 && std::stoi(s.substr(i + 4, 2)) <= 59;
    return false;
}

bool valid_format(const std::string& format, const std::string& s) {
    if (format == "date") return valid_date(s);
    if (format == "time") return valid_time(s);
    if (format == "date-time")
        return s.size() > 11 && s[10] == 'T' && valid_date(s.substr(0, 10)) && valid_time(s.substr(11));
    if (format == "uuid") {
        if (s.size() != 36) return false;
        for (size_t i = 0; i < s.size(); ++i) {
            if (i == 8 || i == 13 || i == 18 || i == 23) {
                if (s[i] != '-') return false;
            } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
                return false;
            }
        }
        return true;
    }
    if (format == "ipv4") {
        int parts = 0;
        size_t i = 0;
        while (i <= s.size()) {
            size_t j = i;
            while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
            if (j == i || j - i > 3 || (j - i > 1 && s[i] == '0') || std::stoi(s.substr(i, j - i)) > 255) return false;
            ++parts;
            if (j == s.size()) break;
            if (s[j] != '.') return false;
            i = j + 1;
        }
        return parts == 4;
    }
    if (format == "email") {
        const size_t at = s.find('@');
        return at != std::string::npos && at > 0 && s.find('@', at + 1) == std::string::npos &&
               s.find('.', at) != std::string::npos && s.back() != '.' && s.find(' ') == std::string::npos;
    }
    return false;
}

bool has_type(const ojson& value, const std::string& type) {
    if (type == "null") return value.is_null();
    if (type == "boolean") return value.is_boolean();
    if (type == "string") return value.is_string();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "number") return value.is_number();
    if (type == "integer")
        return value.is_number_integer() ||
               (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
    return false;
}

}  // namespace

std::string validate_json(const ojson& value, const ojson& schema, const ojson& root) {
    if (schema.is_boolean()) return schema.get<bool>() ? "" : "schema false";
    if (schema.contains("$ref")) {
        const std::string ref = schema.at("$ref").get<std::string>();
        const ojson& target = ref == "#" ? root : root.at(ojson::json_pointer(ref.substr(1)));
        if (std::string e = validate_json(value, target, root); !e.empty()) return e;
    }
    if (schema.contains("type")) {
        bool ok = false;
        const ojson& t = schema.at("type");
        if (t.is_string()) ok = has_type(value, t.get<std::string>());
        for (const ojson& x : t.is_array() ? t : ojson::array()) ok = ok || has_type(value, x.get<std::string>());
        if (!ok) return "type " + t.dump() + " of " + value.dump();
    }
    if (schema.contains("const") && value != schema.at("const")) return "const";
    if (schema.contains("enum") &&
        std::find(schema.at("enum").begin(), schema.at("enum").end(), value) == schema.at("enum").end())
        return "enum: " + value.dump();
    for (const char* key : {"anyOf", "oneOf"})
        if (schema.contains(key)) {
            int matched = 0;
            for (const ojson& s : schema.at(key)) matched += validate_json(value, s, root).empty();
            if (matched == 0 || (std::string(key) == "oneOf" && matched != 1))
                return std::string(key) + " " + value.dump();
        }
    if (schema.contains("allOf"))
        for (const ojson& s : schema.at("allOf"))
            if (std::string e = validate_json(value, s, root); !e.empty()) return "allOf: " + e;
    if (value.is_string()) {
        const std::string s = value.get<std::string>();
        if (schema.contains("minLength") && codepoints(s) < schema.at("minLength").get<int64_t>()) return "minLength";
        if (schema.contains("maxLength") && codepoints(s) > schema.at("maxLength").get<int64_t>()) return "maxLength";
        if (schema.contains("pattern") &&
            !std::regex_search(s, std::regex(schema.at("pattern").get<std::string>(), std::regex::ECMAScript)))
            return "pattern " + s;
        if (schema.contains("format") && !valid_format(schema.at("format").get<std::string>(), s)) return "format " + s;
    }
    if (value.is_number()) {
        const double x = value.get<double>();
        if (schema.contains("minimum") && x < schema.at("minimum").get<double>()) return "minimum " + value.dump();
        if (schema.contains("maximum") && x > schema.at("maximum").get<double>()) return "maximum " + value.dump();
        if (schema.contains("exclusiveMinimum") && x <= schema.at("exclusiveMinimum").get<double>())
            return "exclusiveMinimum";
        if (schema.contains("exclusiveMaximum") && x >= schema.at("exclusiveMaximum").get<double>())
            return "exclusiveMaximum";
    }
    if (value.is_array()) {
        const int64_t n = int64_t(value.size());
        if (schema.contains("minItems") && n < schema.at("minItems").get<int64_t>()) return "minItems";
        if (schema.contains("maxItems") && n > schema.at("maxItems").get<int64_t>()) return "maxItems";
        size_t prefix = 0;
        if (schema.contains("prefixItems")) {
            prefix = schema.at("prefixItems").size();
            for (size_t i = 0; i < prefix && i < value.size(); ++i)
                if (std::string e = validate_json(value[i], schema.at("prefixItems")[i], root); !e.empty()) return e;
        }
        if (schema.contains("items"))
            for (size_t i = prefix; i < value.size(); ++i)
                if (std::string e = validate_json(value[i], schema.at("items"), root); !e.empty()) return e;
    }
    if (value.is_object()) {
        const ojson props = schema.value("properties", ojson::object());
        for (const ojson& name : schema.value("required", ojson::array()))
            if (!value.contains(name.get<std::string>())) return "required " + name.get<std::string>();
        const int64_t members = int64_t(value.size());  // distinct keys: a repeated key parses as one member
        if (schema.contains("minProperties") && members < schema.at("minProperties").get<int64_t>())
            return "minProperties";
        if (schema.contains("maxProperties") && members > schema.at("maxProperties").get<int64_t>())
            return "maxProperties";
        for (const auto& [k, v] : value.items()) {
            if (props.contains(k)) {
                if (std::string e = validate_json(v, props.at(k), root); !e.empty()) return k + ": " + e;
            } else if (schema.contains("additionalProperties")) {
                if (std::string e = validate_json(v, schema.at("additionalProperties"), root); !e.empty())
                    return "additional " + k + ": " + e;
            }
        }
    }
    return "";
}

}  // namespace taco::structured::testing
