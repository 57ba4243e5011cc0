#include "core/json_util.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

// Builds an ordered_json in time linear in the text. nlohmann's own parser inserts each member through
// ordered_map::operator[], a linear search of the object's members so far (quadratic: a 32 MiB body of distinct keys
// would take hours); here each open object keeps a hash index of its keys. Duplicate keys behave as in nlohmann:
// the member keeps its first position and takes the last value.
class OrderedBuilder {
public:
    using ojson = nlohmann::ordered_json;

    bool null() { return value(ojson(nullptr)); }
    bool boolean(bool b) { return value(ojson(b)); }
    bool number_integer(ojson::number_integer_t n) { return value(ojson(n)); }
    bool number_unsigned(ojson::number_unsigned_t n) { return value(ojson(n)); }
    bool number_float(ojson::number_float_t x, const ojson::string_t&) { return value(ojson(x)); }
    bool string(ojson::string_t& text) { return value(ojson(std::move(text))); }
    bool binary(ojson::binary_t& bytes) { return value(ojson::binary(std::move(bytes))); }
    bool start_object(std::size_t) { return open(ojson::object()); }
    bool start_array(std::size_t) { return open(ojson::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(ojson::string_t& name) {
        Frame& frame = frames_.back();
        auto& members = static_cast<ojson::object_t::Container&>(frame.container->get_ref<ojson::object_t&>());
        auto [it, inserted] = frame.index.try_emplace(name, members.size());
        if (inserted) members.emplace_back(std::move(name), nullptr);
        frame.slot = &members[it->second].second;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
        error_ = e.what();
        return false;
    }

    ojson& root() { return root_; }
    const std::string& error_message() const { return error_; }

private:
    struct Frame {
        ojson* container;
        std::unordered_map<std::string, size_t> index;  // objects: member name -> position
        ojson* slot = nullptr;                          // objects: where the value of the last key goes
    };

    // Where the next value goes: the root, the end of the open array, or the open object's member.
    ojson* place(ojson v) {
        if (frames_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Frame& frame = frames_.back();
        if (frame.container->is_array()) {
            auto& items = frame.container->get_ref<ojson::array_t&>();
            items.push_back(std::move(v));
            return &items.back();
        }
        *frame.slot = std::move(v);
        return frame.slot;
    }
    bool value(ojson v) {
        place(std::move(v));
        return true;
    }
    // The parent does not grow while a child is open, so the pointer to the child stays valid until it closes.
    bool open(ojson container) {
        frames_.push_back(Frame{place(std::move(container)), {}, nullptr});
        return true;
    }
    bool close() {
        frames_.pop_back();
        return true;
    }

    ojson root_;
    std::vector<Frame> frames_;
    std::string error_;
};

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
    TACO_RETURN_IF_ERROR(check_json_depth(text));
    OrderedBuilder builder;
    if (!nlohmann::ordered_json::sax_parse(text.begin(), text.end(), &builder)) {
        // parse_error, and out_of_range for a number beyond double range ("1e999"), as parse_json words them.
        return error("invalid JSON: {}", builder.error_message());
    }
    return std::move(builder.root());
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
    return Excerpt<nlohmann::json>(max_chars).render(value);
}

std::string json_excerpt(const nlohmann::ordered_json& value, size_t max_chars) {
    return Excerpt<nlohmann::ordered_json>(max_chars).render(value);
}

}  // namespace taco
