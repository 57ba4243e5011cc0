#include "server/request_json.h"

#include <vector>

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

// Where the parser is: one frame per open object (the key being read) or array (the index of the element being
// read), kept up to date from the parser's callback so that an error can name the field it happened in.
class JsonPath {
public:
    void on_event(json::parse_event_t event, const json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start: frames_.push_back(Frame{false, "", 0}); break;
            case json::parse_event_t::array_start: frames_.push_back(Frame{true, "", 0}); break;
            case json::parse_event_t::key:
                if (!frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get<std::string>();
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                if (!frames_.empty()) frames_.pop_back();
                element_done();
                break;
            case json::parse_event_t::value: element_done(); break;
        }
    }

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

    void element_done() {
        if (!frames_.empty() && frames_.back().is_array) frames_.back().index++;
    }

    std::vector<Frame> frames_;
};

}  // namespace

std::optional<json> parse_request_json(const std::string& body, ApiError& error) {
    // Nesting is refused before nlohmann (and the path tracker) sees the text: every later walk stays shallow.
    if (Status depth = check_json_depth(body); !depth) {
        error = ApiError{400, fmt::format("the request body: {}", depth.message()), "", "BadRequestError"};
        return std::nullopt;
    }
    JsonPath path;
    auto track = [&path](int, json::parse_event_t event, json& parsed) {
        path.on_event(event, parsed);
        return true;  // keep every value
    };
    try {
        return json::parse(body, track);
    } catch (const json::parse_error& e) {
        error = ApiError{400, fmt::format("invalid JSON in the request body: {}", e.what()), "", "BadRequestError"};
    } catch (const json::out_of_range& e) {  // nlohmann's error 406: a number that overflows a double
        const std::string field = path.str();
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
