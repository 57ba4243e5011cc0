#include "tokenizer/jinja/template.h"

#include <ctime>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace taco::jinja {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Result<Value> range_global(CallArgs& args, Evaluator&) {
    if (!args.keyword.empty()) return Status::error("range() takes no keyword arguments");
    std::vector<int64_t> n;
    for (const Value& v : args.positional) {
        if (!(v.is_int() || v.is_bool()))
            return error("'{}' object cannot be interpreted as an integer", v.type_name());
        n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) return error("range expected 1 to 3 arguments, got {}", n.size());
    int64_t start = n.size() == 1 ? 0 : n[0];
    int64_t stop = n.size() == 1 ? n[0] : n[1];
    int64_t step = n.size() == 3 ? n[2] : 1;
    if (step == 0) return Status::error("range() arg 3 must not be zero");
    __int128 count = 0;
    if (step > 0 && stop > start) count = (static_cast<__int128>(stop) - start + step - 1) / step;
    if (step < 0 && stop < start)
        count = (static_cast<__int128>(start) - stop - step - 1) / (-static_cast<__int128>(step));
    if (count > kMaxRange)
        return error("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
    std::vector<Value> items;
    for (__int128 i = 0; i < count; ++i) items.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
    return Value::list(std::move(items));
}

Result<ValueDict> mapping_from_args(CallArgs& args, const char* function) {
    ValueDict d;
    if (args.positional.size() > 1) return error("{} expected at most 1 positional argument", function);
    if (args.positional.size() == 1) {
        const Value& src = args.positional[0];
        if (src.is_dict()) {
            d = src.as_dict();
        } else if (src.is_sequence()) {
            for (const Value& pair : src.items()) {
                if (!pair.is_sequence() || pair.items().size() != 2)
                    return error("{}: sequence elements must be pairs", function);
                d.set(pair.items()[0], pair.items()[1]);
            }
        } else {
            return error("{}: '{}' object is not a mapping", function, src.type_name());
        }
    }
    for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
    return d;
}

std::shared_ptr<Frame> make_globals() {
    auto globals = std::make_shared<Frame>(nullptr);
    globals->set("range", Value::callable("range", range_global));
    globals->set("namespace", Value::callable("namespace", [](CallArgs& args, Evaluator&) -> Result<Value> {
                     TACO_ASSIGN_OR_RETURN(ValueDict d, mapping_from_args(args, "namespace"));
                     return Value::make_namespace(std::move(d));
                 }));
    globals->set("dict", Value::callable("dict", [](CallArgs& args, Evaluator&) -> Result<Value> {
                     TACO_ASSIGN_OR_RETURN(ValueDict d, mapping_from_args(args, "dict"));
                     return Value::dict(std::move(d));
                 }));
    globals->set("raise_exception", Value::callable("raise_exception", [](CallArgs& args, Evaluator&) -> Result<Value> {
                     std::string message = args.positional.empty() ? "" : args.positional[0].str();
                     return Status::error("raise_exception: " + message);
                 }));
    globals->set("strftime_now", Value::callable("strftime_now", [](CallArgs& args, Evaluator& ev) -> Result<Value> {
                     if (args.positional.size() != 1 || !args.positional[0].is_string())
                         return Status::error("strftime_now() takes one format string");
                     std::time_t now = ev.now_epoch_seconds() ? static_cast<std::time_t>(*ev.now_epoch_seconds())
                                                              : std::time(nullptr);
                     std::tm tm{};
                     localtime_r(&now, &tm);
                     const std::string& format = args.positional[0].as_string();
                     if (format.empty()) return Value::string("");
                     std::vector<char> buf(format.size() * 8 + 256);
                     size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
                     return Value::string(std::string(buf.data(), n));
                 }));
    // Defined in jinja2 but random or stateful; present so `is defined` agrees, refused when called.
    for (const char* name : {"lipsum", "cycler", "joiner"}) {
        std::string n = name;
        globals->set(n, Value::callable(n, [n](CallArgs&, Evaluator&) -> Result<Value> {
                         return Status::error(n + "() is not supported in chat templates");
                     }));
    }
    return globals;
}

}  // namespace

Result<Template> Template::parse(const std::string& source) {
    TACO_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
    TACO_ASSIGN_OR_RETURN(Body body, parse_template(tokens));
    return Template(std::make_shared<const Body>(std::move(body)));
}

Result<std::string> Template::render(const std::vector<std::pair<std::string, Value>>& context,
                                     const RenderOptions& options) const {
    auto frame = std::make_shared<Frame>(make_globals());
    for (const auto& [name, value] : context) frame->set(name, value);
    Evaluator evaluator(options.limits, options.now_epoch_seconds);
    std::string out;
    try {
        const RenderLimits& l = options.limits;
        RenderBudgetScope budget(l.max_list_items, l.max_built_items, l.max_built_bytes);
        TACO_RETURN_IF_ERROR(evaluator.render(*body_, frame, out));
    } catch (const std::length_error& e) {  // Value::str()/repr() past kMaxPrintBytes, RenderBudgetScope's limits
        return error("template render failed: {}", e.what());
    } catch (const std::bad_alloc&) {
        return Status::error("template render failed: out of memory");
    }
    return out;
}

}  // namespace taco::jinja
