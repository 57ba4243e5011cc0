#include "server/request_json.h"

#include <vector>

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

// A SAX handler that builds nothing and only follows where the parser is: one frame per open object (the key being
// read) or array (the index of the element being read), so that a number overflow can be named by its field. Run
// only once a parse has failed that way: nlohmann's callback parser, which could track this during the real parse,
// rescans the parent container at every object's end (quadratic in a list of objects, minutes for 32 MiB of
// messages).
class JsonPath {
public:
    bool null() { return element_done(); }
    bool boolean(bool) { return element_done(); }
    bool number_integer(json::number_integer_t) { return element_done(); }
    bool number_unsigned(json::number_unsigned_t) { return element_done(); }
    bool number_float(json::number_float_t, const json::string_t&) { return element_done(); }
    bool string(json::string_t&) { return element_done(); }
    bool binary(json::binary_t&) { return element_done(); }
    bool start_object(std::size_t) { return push(false); }
    bool start_array(std::size_t) { return push(true); }
    bool key(json::string_t& key) {
        if (!frames_.empty()) frames_.back().key = key;
        return true;
    }
    bool end_object() { return pop(); }
    bool end_array() { return pop(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

    // "" at the top level; else e.g. "logit_bias.50256" or "messages[1].content".
    std::string str() const {
        std::string out;
        for (const Frame& frame : frames_) {
            if (frame.is_array) {
                out += fmt::format("[{}]", frame.index);
            } else {
                if (!out.empty()) out += '.';
                out += frame.key;
            }
        }
        return out;
    }

private:
    struct Frame {
        bool is_array;
        std::string key;  // objects: the member being read
        size_t index;     // arrays: the element being read
    };

    bool push(bool is_array) {
        frames_.push_back(Frame{is_array, "", 0});
        return true;
    }
    bool pop() {
        if (!frames_.empty()) frames_.pop_back();
        return element_done();
    }
    bool element_done() {
        if (!frames_.empty() && frames_.back().is_array) frames_.back().index++;
        return true;
    }

    std::vector<Frame> frames_;
};

// The path of the field where parsing `body` stops (for a body that fails only on a number beyond double range).
std::string path_of_failure(const std::string& body) {
    JsonPath path;
    json::sax_parse(body, &path, json::input_format_t::json, /*strict=*/true);
    return path.str();
}

}  // namespace

std::optional<json> parse_request_json(const std::string& body, ApiError& error) {
    // Nesting is refused before nlohmann sees the text: every later walk stays shallow.
    if (Status depth = check_json_depth(body); !depth) {
        error = ApiError{400, fmt::format("the request body: {}", depth.message()), "", "BadRequestError"};
        return std::nullopt;
    }
    try {
        return json::parse(body);
    } catch (const json::parse_error& e) {
        error = ApiError{400, fmt::format("invalid JSON in the request body: {}", e.what()), "", "BadRequestError"};
    } catch (const json::out_of_range& e) {  // nlohmann's error 406: a number that overflows a double
        const std::string field = path_of_failure(body);
        error = ApiError{400,
                         fmt::format("{} holds a number beyond the range of a double ({})",
                                     field.empty() ? std::string("the request body") : "'" + field + "'", e.what()),
                         field, "BadRequestError"};
    } catch (const json::exception& e) {
        error = ApiError{400, fmt::format("invalid JSON in the request body: {}", e.what()), "", "BadRequestError"};
    }
    return std::nullopt;
}

}  // namespace taco::server
