#include "server/tool_parser.h"

#include <cctype>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_util.h"

namespace taco::server {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;

constexpr std::string_view kHermesBegin = "<tool_call>";
constexpr std::string_view kHermesEnd = "</tool_call>";
constexpr std::string_view kMistralBegin = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

// One call as far as the text goes.
struct CallScan {
    std::optional<std::string> name;  // once its string is complete
    size_t args_begin = npos;         // where the arguments' JSON starts in the text
    size_t args_end = npos;           // where it ends; npos while it is incomplete
    bool complete = false;            // the call's object (pythonic: its parentheses) closed
    std::string converted_args;       // pythonic: the arguments as JSON, once complete
};

struct Scan {
    size_t content_end = 0;      // text[0, content_end) is content that may be shown
    bool content_final = false;  // no content comes after content_end (the calls began)
    std::vector<CallScan> calls;
    bool bad = false;  // the calls' syntax broke
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_ws(std::string_view s, size_t pos) {
    while (pos < s.size() && is_ws(s[pos])) ++pos;
    return pos;
}

// s[pos] is a quote; the index after its closing quote, or npos when the text ends first.
size_t string_end(std::string_view s, size_t pos) {
    const char quote = s[pos];
    for (size_t i = pos + 1; i < s.size(); ++i) {
        if (s[i] == '\\') {
            ++i;
        } else if (s[i] == quote) {
            return i + 1;
        }
    }
    return npos;
}

// The end of the JSON value at s[pos], or npos while the text ends inside it (a number at the very end may go on,
// unless `final`).
size_t value_end(std::string_view s, size_t pos, bool final) {
    if (pos >= s.size()) return npos;
    const char c = s[pos];
    if (c == '"') return string_end(s, pos);
    if (c == '{' || c == '[') {
        int depth = 0;
        for (size_t i = pos; i < s.size(); ++i) {
            if (s[i] == '"') {
                i = string_end(s, i);
                if (i == npos) return npos;
                --i;
            } else if (s[i] == '{' || s[i] == '[') {
                ++depth;
            } else if (s[i] == '}' || s[i] == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return npos;
    }
    size_t i = pos;
    while (i < s.size() && !is_ws(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ';') ++i;
    return i == s.size() && !final ? npos : i;
}

// The longest proper prefix of `tag` that `s` ends with: text that may still become the tag.
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
    for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
        if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
    return 0;
}

// A call object {"name": ..., "arguments" | "parameters": ...} at s[pos]; returns the index after it, or npos when
// the text ends inside it. `bad` on a syntax error.
size_t scan_call_object(std::string_view s, size_t pos, bool final, CallScan& call, bool& bad) {
    if (pos >= s.size()) return npos;
    if (s[pos] != '{') {
        bad = true;
        return npos;
    }
    pos = skip_ws(s, pos + 1);
    while (true) {
        if (pos >= s.size()) return npos;
        if (s[pos] == '}') {
            call.complete = true;
            return pos + 1;
        }
        if (s[pos] != '"') {
            bad = true;
            return npos;
        }
        const size_t key_end = string_end(s, pos);
        if (key_end == npos) return npos;
        std::string key;
        try {
            key = nlohmann::json::parse(s.substr(pos, key_end - pos)).get<std::string>();
        } catch (const std::exception&) {
            bad = true;
            return npos;
        }
        pos = skip_ws(s, key_end);
        if (pos >= s.size()) return npos;
        if (s[pos] != ':') {
            bad = true;
            return npos;
        }
        pos = skip_ws(s, pos + 1);
        const size_t end = value_end(s, pos, final);
        if (key == "arguments" || key == "parameters") {
            call.args_begin = pos;
            call.args_end = end;
        }
        if (end == npos) return npos;
        if (key == "name") {
            try {
                auto value = nlohmann::json::parse(s.substr(pos, end - pos));
                if (!value.is_string()) {
                    bad = true;
                    return npos;
                }
                call.name = value.get<std::string>();
            } catch (const std::exception&) {
                bad = true;
                return npos;
            }
        }
        pos = skip_ws(s, end);
        if (pos >= s.size()) return npos;
        if (s[pos] == ',') {
            pos = skip_ws(s, pos + 1);
        } else if (s[pos] != '}') {
            bad = true;
            return npos;
        }
    }
}

// ---- pythonic: Python literals to JSON -----------------------------------------------------------------------------

enum class Py { kOk, kIncomplete, kBad };

Py py_value(std::string_view s, size_t& pos, ojson& out, int depth);

Py py_string(std::string_view s, size_t& pos, ojson& out) {
    const char quote = s[pos];
    std::string text;
    for (size_t i = pos + 1; i < s.size(); ++i) {
        const char c = s[i];
        if (c == quote) {
            out = text;
            pos = i + 1;
            return Py::kOk;
        }
        if (c != '\\') {
            text.push_back(c);
            continue;
        }
        if (++i >= s.size()) return Py::kIncomplete;
        switch (s[i]) {
            case 'n': text.push_back('\n'); break;
            case 't': text.push_back('\t'); break;
            case 'r': text.push_back('\r'); break;
            case '0': text.push_back('\0'); break;
            default: text.push_back(s[i]); break;  // \\ \' \" and the rest as written
        }
    }
    return Py::kIncomplete;
}

// Items of a list / dict up to `close`; dict items are key: value.
Py py_items(std::string_view s, size_t& pos, ojson& out, char close, bool dict, int depth) {
    ++pos;
    out = dict ? ojson::object() : ojson::array();
    while (true) {
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return Py::kIncomplete;
        if (s[pos] == close) {
            ++pos;
            return Py::kOk;
        }
        ojson key, value;
        if (dict) {
            if (Py r = py_value(s, pos, key, depth + 1); r != Py::kOk) return r;
            if (!key.is_string()) return Py::kBad;
            pos = skip_ws(s, pos);
            if (pos >= s.size()) return Py::kIncomplete;
            if (s[pos] != ':') return Py::kBad;
            pos = skip_ws(s, pos + 1);
        }
        if (Py r = py_value(s, pos, value, depth + 1); r != Py::kOk) return r;
        if (dict) {
            out[key.get<std::string>()] = std::move(value);
        } else {
            out.push_back(std::move(value));
        }
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return Py::kIncomplete;
        if (s[pos] == ',') {
            ++pos;
        } else if (s[pos] != close) {
            return Py::kBad;
        }
    }
}

Py py_value(std::string_view s, size_t& pos, ojson& out, int depth) {
    if (depth > limits::kMaxJsonDepth) return Py::kBad;
    pos = skip_ws(s, pos);
    if (pos >= s.size()) return Py::kIncomplete;
    const char c = s[pos];
    if (c == '"' || c == '\'') return py_string(s, pos, out);
    if (c == '[') return py_items(s, pos, out, ']', false, depth);
    if (c == '{') return py_items(s, pos, out, '}', true, depth);
    size_t end = pos;
    while (end < s.size() &&
           (std::isalnum(uint8_t(s[end])) || s[end] == '.' || s[end] == '-' || s[end] == '+' || s[end] == '_'))
        ++end;
    if (end == s.size()) return Py::kIncomplete;  // a word or number may go on
    const std::string_view word = s.substr(pos, end - pos);
    if (word == "True" || word == "False") {
        out = word == "True";
    } else if (word == "None") {
        out = nullptr;
    } else {
        try {
            size_t used = 0;
            const std::string w(word);
            if (w.find_first_of(".eE") == std::string::npos) {
                out = std::stoll(w, &used);
            } else {
                out = std::stod(w, &used);
            }
            if (used != w.size()) return Py::kBad;
        } catch (const std::exception&) {
            return Py::kBad;
        }
    }
    pos = end;
    return Py::kOk;
}

// name(key=value, ...) at s[pos].
Py py_call(std::string_view s, size_t& pos, CallScan& call) {
    size_t end = pos;
    while (end < s.size() && (std::isalnum(uint8_t(s[end])) || s[end] == '_' || s[end] == '.' || s[end] == '-')) ++end;
    if (end == s.size()) return Py::kIncomplete;
    if (end == pos || s[end] != '(') return Py::kBad;
    const std::string name(s.substr(pos, end - pos));
    pos = end + 1;
    ojson args = ojson::object();
    while (true) {
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return Py::kIncomplete;
        if (s[pos] == ')') break;
        size_t key_end = pos;
        while (key_end < s.size() && (std::isalnum(uint8_t(s[key_end])) || s[key_end] == '_')) ++key_end;
        const size_t eq = skip_ws(s, key_end);
        if (eq >= s.size()) return Py::kIncomplete;
        if (key_end == pos || s[eq] != '=') return Py::kBad;
        const std::string key(s.substr(pos, key_end - pos));
        pos = eq + 1;
        ojson value;
        if (Py r = py_value(s, pos, value, 0); r != Py::kOk) return r;
        args[key] = std::move(value);
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return Py::kIncomplete;
        if (s[pos] == ',') {
            ++pos;
        } else if (s[pos] != ')') {
            return Py::kBad;
        }
    }
    ++pos;
    call.name = name;
    call.converted_args = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
    call.complete = true;
    return Py::kOk;
}

void scan_pythonic(std::string_view s, size_t pos, Scan& scan) {
    ++pos;  // '['
    while (true) {
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return;
        if (s[pos] == ']') return;
        CallScan call;
        const Py r = py_call(s, pos, call);
        if (r == Py::kBad) {
            scan.bad = true;
            return;
        }
        if (r == Py::kIncomplete) return;
        scan.calls.push_back(std::move(call));
        pos = skip_ws(s, pos);
        if (pos >= s.size()) return;
        if (s[pos] == ',') {
            ++pos;
        } else if (s[pos] != ']') {
            scan.bad = true;
            return;
        }
    }
}

// ---- the formats ---------------------------------------------------------------------------------------------------

// Objects one after another from `pos`: before each, `open` (and whitespace); between, `separator`; `close` after
// each (hermes) or after the last (an array). The rest of the text after them is ignored, as vLLM ignores it.
void scan_objects(std::string_view s, size_t pos, bool final, std::string_view before_each, std::string_view after_each,
                  char separator, Scan& scan) {
    while (true) {
        pos = skip_ws(s, pos);
        if (!before_each.empty()) {
            if (s.substr(pos, before_each.size()) != before_each) return;
            pos = skip_ws(s, pos + before_each.size());
        }
        if (pos >= s.size()) return;
        CallScan call;
        const size_t end = scan_call_object(s, pos, final, call, scan.bad);
        scan.calls.push_back(std::move(call));
        if (end == npos) return;
        pos = skip_ws(s, end);
        if (!after_each.empty()) {
            if (s.substr(pos, after_each.size()) != after_each) return;  // an unclosed last call still counts
            pos += after_each.size();
            continue;
        }
        if (pos >= s.size() || s[pos] != separator) return;
        pos = skip_ws(s, pos + 1);
    }
}

// Formats whose calls follow content after a tag (hermes, mistral).
// `from`: the tag does not start before it (the content shown so far holds none).
void scan_tagged(std::string_view s, bool final, std::string_view tag, Scan& scan, ToolCallFormat format, size_t from) {
    const size_t at = s.find(tag, from);
    if (at == npos) {
        scan.content_end = final ? s.size() : s.size() - partial_tag_suffix(s, tag);
        return;
    }
    scan.content_end = at;
    scan.content_final = true;
    if (format == ToolCallFormat::kHermes) {
        scan_objects(s, at, final, kHermesBegin, kHermesEnd, 0, scan);
        return;
    }
    // Mistral: after [TOOL_CALLS] a JSON list of calls (tokenizers before v11) or a bare object, or name[ARGS]{...}
    // (v11 on), each further call behind another [TOOL_CALLS].
    size_t pos = at;
    while (true) {
        pos = skip_ws(s, pos);
        if (s.substr(pos, tag.size()) != tag) return;
        pos = skip_ws(s, pos + tag.size());
        if (pos >= s.size()) return;
        if (s[pos] == '[') return scan_objects(s, pos + 1, final, "", "", ',', scan);
        if (s[pos] == '{') return scan_objects(s, pos, final, "", "", ',', scan);
        CallScan call;
        const size_t args_tag = s.find(kMistralArgs, pos);
        std::string_view name = s.substr(pos, args_tag == npos ? npos : args_tag - pos);
        while (!name.empty() && is_ws(name.back())) name.remove_suffix(1);
        for (char c : name) {
            if (!(std::isalnum(uint8_t(c)) || c == '_' || c == '-' || c == '.')) {
                scan.bad = true;
                return;
            }
        }
        if (args_tag == npos) {
            scan.calls.push_back(std::move(call));  // its name is not complete yet
            return;
        }
        call.name = std::string(name);
        call.args_begin = skip_ws(s, args_tag + kMistralArgs.size());
        call.args_end = value_end(s, call.args_begin, final);
        call.complete = call.args_end != npos;
        scan.calls.push_back(call);
        if (!call.complete) return;
        pos = call.args_end;
    }
}

// Formats whose whole output is calls when it starts with `start` (after whitespace), else content.
void scan_leading(std::string_view s, bool final, ToolCallFormat format, Scan& scan) {
    const size_t pos = skip_ws(s, 0);
    const std::string_view rest = s.substr(pos);
    auto starts = [&](std::string_view prefix) { return rest.substr(0, prefix.size()) == prefix; };
    const bool llama = format == ToolCallFormat::kLlama3Json;
    const bool calls = llama ? (starts(kPythonTag) || starts("{")) : starts("[");
    if (!calls) {
        // Undecided while the text is blank or a partial <|python_tag|>.
        const bool undecided = !final && (rest.empty() || (llama && kPythonTag.substr(0, rest.size()) == rest));
        scan.content_end = undecided ? 0 : s.size();
        return;
    }
    scan.content_end = 0;
    scan.content_final = true;
    if (format == ToolCallFormat::kPythonic) {
        scan_pythonic(s, pos, scan);
    } else if (llama) {
        const size_t start = starts(kPythonTag) ? skip_ws(s, pos + kPythonTag.size()) : pos;
        scan_objects(s, start, final, "", "", ';', scan);
    } else {
        scan_objects(s, pos + 1, final, "", "", ',', scan);
    }
}

// `from`: where a tagged format's tag may start at the earliest (streaming rescans only what is new).
Scan scan(ToolCallFormat format, std::string_view s, bool final, size_t from = 0) {
    Scan out;
    switch (format) {
        case ToolCallFormat::kHermes: scan_tagged(s, final, kHermesBegin, out, format, from); break;
        case ToolCallFormat::kMistral: scan_tagged(s, final, kMistralBegin, out, format, from); break;
        case ToolCallFormat::kLlama3Json:
        case ToolCallFormat::kPythonic:
        case ToolCallFormat::kJsonArray: scan_leading(s, final, format, out); break;
    }
    return out;
}

// The arguments' JSON text of a call as far as it goes (trailing whitespace of an unfinished value held back).
std::string_view arguments_so_far(std::string_view s, const CallScan& call) {
    if (!call.converted_args.empty()) return call.converted_args;
    if (call.args_begin == npos) return call.complete ? std::string_view("{}") : std::string_view();
    if (call.args_end != npos) return s.substr(call.args_begin, call.args_end - call.args_begin);
    std::string_view partial = s.substr(call.args_begin);
    while (!partial.empty() && is_ws(partial.back())) partial.remove_suffix(1);
    return partial;
}

}  // namespace

Result<ToolCallFormat> tool_call_format(std::string_view name) {
    if (name == "hermes") return ToolCallFormat::kHermes;
    if (name == "llama3_json" || name == "llama") return ToolCallFormat::kLlama3Json;
    if (name == "mistral") return ToolCallFormat::kMistral;
    if (name == "pythonic") return ToolCallFormat::kPythonic;
    return error("--tool-call-parser '{}' is not available here (hermes, llama3_json, mistral, pythonic)", name);
}

const char* tool_call_format_name(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::kHermes: return "hermes";
        case ToolCallFormat::kLlama3Json: return "llama3_json";
        case ToolCallFormat::kMistral: return "mistral";
        case ToolCallFormat::kPythonic: return "pythonic";
        case ToolCallFormat::kJsonArray: return "json_array";
    }
    return "";
}

std::string new_tool_call_id(ToolCallFormat format) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    if (format == ToolCallFormat::kMistral) {
        static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        std::string id;
        for (int i = 0; i < 9; ++i) id.push_back(kAlnum[rng() % (sizeof(kAlnum) - 1)]);
        return id;
    }
    return fmt::format("chatcmpl-tool-{:016x}{:016x}", rng(), rng());
}

std::optional<ConstrainedToolFormat> constrained_tool_format(ToolCallFormat format) {
    switch (format) {
        case ToolCallFormat::kHermes:
            return ConstrainedToolFormat{{"<tool_call>\n", "\n</tool_call>\n<tool_call>\n", "\n</tool_call>", {}},
                                         "arguments"};
        case ToolCallFormat::kLlama3Json: return ConstrainedToolFormat{{"", "; ", "", {}}, "parameters"};
        case ToolCallFormat::kMistral: return ConstrainedToolFormat{{"[TOOL_CALLS][", ", ", "]", {}}, "arguments"};
        case ToolCallFormat::kJsonArray: return ConstrainedToolFormat{{"[", ", ", "]", {}}, "parameters"};
        case ToolCallFormat::kPythonic: return std::nullopt;
    }
    return std::nullopt;
}

ParsedToolCalls ToolParser::parse(ToolCallFormat format, std::string_view text) {
    const Scan s = scan(format, text, /*final=*/true);
    ParsedToolCalls out;
    const auto all_content = [&] {
        ParsedToolCalls content_only;
        content_only.content = std::string(text);
        return content_only;
    };
    if (s.bad) return all_content();
    for (const CallScan& call : s.calls) {
        if (!call.name || call.name->empty()) return all_content();
        const bool pythonic = format == ToolCallFormat::kPythonic;
        if (!pythonic && (call.args_begin != npos && call.args_end == npos)) return all_content();
        const std::string arguments(arguments_so_far(text, call));
        if (!pythonic && !parse_json(arguments)) return all_content();
        out.calls.push_back({new_tool_call_id(format), *call.name, arguments});
    }
    if (out.calls.empty()) return all_content();
    if (s.content_end > 0) out.content = std::string(text.substr(0, s.content_end));
    return out;
}

void ToolParser::feed(std::string_view delta, std::string& content, std::vector<ToolCallDelta>& calls) {
    text_.append(delta);
    emit(false, content, calls);
}

void ToolParser::finish(std::string& content, std::vector<ToolCallDelta>& calls) { emit(true, content, calls); }

void ToolParser::emit(bool final, std::string& content, std::vector<ToolCallDelta>& calls) {
    const Scan s = scan(format_, text_, final, content_sent_);
    if (!content_done_ && s.content_end > content_sent_) {
        content.append(text_, content_sent_, s.content_end - content_sent_);
        content_sent_ = s.content_end;
    }
    if (s.content_final) content_done_ = true;
    // At the end, text that never became a call is content after all, as the whole-text parse gives it.
    if (final && sent_.empty() && content_sent_ < text_.size() && (s.bad || s.calls.empty() || !s.calls[0].name)) {
        content.append(text_, content_sent_);
        content_sent_ = text_.size();
        return;
    }
    for (size_t i = 0; i < s.calls.size(); ++i) {
        const CallScan& call = s.calls[i];
        if (!call.name) break;  // arguments wait for the name; later calls wait for this one
        if (i >= sent_.size()) sent_.resize(i + 1);
        Sent& sent = sent_[i];
        // As vLLM streams a call: a first delta with its id and name, then the arguments in pieces.
        if (!sent.named) {
            ToolCallDelta first;
            first.index = int64_t(i);
            first.id = new_tool_call_id(format_);
            first.name = *call.name;
            calls.push_back(std::move(first));
            sent.named = true;
        }
        const std::string_view args = arguments_so_far(text_, call);
        if (args.size() > sent.arguments) {
            ToolCallDelta more;
            more.index = int64_t(i);
            more.arguments = std::string(args.substr(sent.arguments));
            calls.push_back(std::move(more));
            sent.arguments = args.size();
        }
    }
}

}  // namespace taco::server
