#include "core/json_util.h"

#include <fmt/format.h>

namespace taco {

Status check_json_depth(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // the escaped character cannot end the string
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return error("JSON nested deeper than {} levels (at byte {}); the limit is limits::kMaxJsonDepth",
                             max_depth, i);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return Status::ok();
}

namespace {

template <class Json>
Result<Json> parse_limited(std::string_view text) {
    TACO_RETURN_IF_ERROR(check_json_depth(text));
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        // parse_error, and out_of_range for a number beyond double range ("1e999").
        return error("invalid JSON: {}", e.what());
    }
}

template <class Json>
class Excerpt {
public:
    explicit Excerpt(size_t max_chars) : max_chars_(max_chars) {}

    std::string render(const Json& value) {
        write(value, 0);
        if (out_.size() > max_chars_) {
            out_.resize(max_chars_);
            out_ += "...";
        }
        return std::move(out_);
    }

private:
    bool full() const { return out_.size() > max_chars_; }

    void write_scalar(const Json& value) {
        std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        if (text.size() > max_chars_ + 1) text.resize(max_chars_ + 1);  // long strings: enough to overflow
        out_ += text;
    }

    void write(const Json& value, int depth) {
        if (!value.is_structured()) return write_scalar(value);
        const bool array = value.is_array();
        if (value.empty()) {
            out_ += array ? "[]" : "{}";
            return;
        }
        if (depth >= limits::kMaxJsonExcerptDepth) {
            out_ += array ? "[...]" : "{...}";
            return;
        }
        out_ += array ? '[' : '{';
        bool first = true;
        for (auto it = value.begin(); it != value.end() && !full(); ++it) {
            if (!first) out_ += ',';
            first = false;
            if (!array) {
                write_scalar(Json(it.key()));
                out_ += ':';
            }
            write(it.value(), depth + 1);
        }
        out_ += array ? ']' : '}';
    }

    size_t max_chars_;
    std::string out_;
};

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text) { return parse_limited<nlohmann::json>(text); }

Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text) {
    return parse_limited<nlohmann::ordered_json>(text);
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
    return Excerpt<nlohmann::json>(max_chars).render(value);
}

std::string json_excerpt(const nlohmann::ordered_json& value, size_t max_chars) {
    return Excerpt<nlohmann::ordered_json>(max_chars).render(value);
}

}  // namespace taco
