#include "tokenizer/jinja/evaluator.h"

#include <fmt/format.h>

#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/string_methods.h"
#include "tokenizer/jinja/tests.h"
#include "tokenizer/jinja/text_util.h"

namespace taco::jinja {

namespace {

constexpr int kMaxEvalDepth = limits::kMaxTemplateEvalDepth;
constexpr int kMaxValueDepth = limits::kMaxTemplateValueDepth;

Status at_line(const Status& status, int line) {
    if (status.is_ok()) return status;
    const std::string& m = status.message();
    if (m.rfind("line ", 0) == 0) return status;
    return Status::error(fmt::format("line {}: {}", line, m));
}

// loop.changed(...) compares with the values of its previous call in the same loop.
using ChangedState = std::shared_ptr<std::optional<std::vector<Value>>>;

Value make_loop(size_t index, size_t length, const std::vector<Value>& items, const ChangedState& changed) {
    // Keys are built once: a loop object is made per iteration.
    static const Value kKeys[] = {Value::string("index"),     Value::string("index0"),   Value::string("revindex"),
                                  Value::string("revindex0"), Value::string("first"),    Value::string("last"),
                                  Value::string("length"),    Value::string("depth"),    Value::string("depth0"),
                                  Value::string("previtem"),  Value::string("nextitem"), Value::string("cycle"),
                                  Value::string("changed")};
    ValueDict d;
    d.entries.reserve(std::size(kKeys));
    size_t next_key = 0;
    auto set = [&](const char*, Value v) { d.entries.emplace_back(kKeys[next_key++], std::move(v)); };
    int64_t i = static_cast<int64_t>(index);
    int64_t n = static_cast<int64_t>(length);
    set("index", Value::integer(i + 1));
    set("index0", Value::integer(i));
    set("revindex", Value::integer(n - i));
    set("revindex0", Value::integer(n - i - 1));
    set("first", Value::boolean(index == 0));
    set("last", Value::boolean(index + 1 == length));
    set("length", Value::integer(n));
    set("depth", Value::integer(1));
    set("depth0", Value::integer(0));
    set("previtem", index > 0 ? items[index - 1] : Value::undefined("previtem", "there is no previous item"));
    set("nextitem", index + 1 < length ? items[index + 1] : Value::undefined("nextitem", "there is no next item"));
    set("cycle", Value::callable("cycle", [index](CallArgs& args, Evaluator&) -> Result<Value> {
            if (args.positional.empty()) return Status::error("no items for cycling given");
            return args.positional[index % args.positional.size()];
        }));
    set("changed", Value::callable("changed", [changed](CallArgs& args, Evaluator&) -> Result<Value> {
            bool differs = !changed->has_value() || (*changed)->size() != args.positional.size();
            for (size_t i = 0; !differs && i < args.positional.size(); ++i)
                differs = !values_equal((**changed)[i], args.positional[i]);
            if (differs) *changed = args.positional;
            return Value::boolean(differs);
        }));
    return Value::dict(std::move(d));
}

}  // namespace

const Value* Frame::lookup(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent_.get()) {
        if (auto it = f->vars_.find(name); it != f->vars_.end()) return &it->second;
    }
    return nullptr;
}

void Frame::set(const std::string& name, Value value) { vars_.insert_or_assign(name, std::move(value)); }

Result<BoundArgs> BoundArgs::bind(const CallArgs& args, const std::vector<std::string>& names, size_t num_required,
                                  const std::string& function) {
    BoundArgs bound;
    bound.values_.resize(names.size());
    if (args.positional.size() > names.size())
        return error("{}() takes at most {} arguments ({} given)", function, names.size(), args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) bound.values_[i] = args.positional[i];
    for (const auto& [key, value] : args.keyword) {
        size_t i = 0;
        while (i < names.size() && names[i] != key) ++i;
        if (i == names.size()) return error("{}() got an unexpected keyword argument '{}'", function, key);
        if (bound.values_[i]) return error("{}() got multiple values for argument '{}'", function, key);
        bound.values_[i] = value;
    }
    for (size_t i = 0; i < num_required; ++i)
        if (!bound.values_[i]) return error("{}() missing required argument '{}'", function, names[i]);
    return bound;
}

Status Evaluator::count_step() {
    if (++steps_ > limits_.max_steps) return Status::error("template exceeded its evaluation budget");
    return Status::ok();
}

Status Evaluator::append_output(std::string& out, const std::string& text) {
    if (out.size() + text.size() > limits_.max_output_bytes)
        return error("template output exceeds {} bytes", limits_.max_output_bytes);
    out += text;
    return Status::ok();
}

Status Evaluator::render(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out) {
    TACO_ASSIGN_OR_RETURN(Flow flow, render_body(body, frame, out));
    (void)flow;
    return Status::ok();
}

Result<Evaluator::Flow> Evaluator::render_body(const Body& body, const std::shared_ptr<Frame>& frame,
                                               std::string& out) {
    for (const auto& stmt : body) {
        TACO_RETURN_IF_ERROR(count_step());
        auto flow = render_stmt(*stmt, frame, out);
        if (!flow.is_ok()) return at_line(flow.status(), stmt->line);
        if (*flow != Flow::kNormal) return *flow;
    }
    return Flow::kNormal;
}

Result<Evaluator::Flow> Evaluator::render_stmt(const Stmt& stmt, const std::shared_ptr<Frame>& frame,
                                               std::string& out) {
    switch (stmt.kind) {
        case StmtKind::kData: TACO_RETURN_IF_ERROR(append_output(out, stmt.text)); return Flow::kNormal;
        case StmtKind::kEmit: {
            TACO_ASSIGN_OR_RETURN(Value v, eval(*stmt.expr, frame));
            TACO_RETURN_IF_ERROR(append_output(out, v.str()));
            return Flow::kNormal;
        }
        case StmtKind::kIf: {
            for (size_t i = 0; i < stmt.conditions.size(); ++i) {
                TACO_ASSIGN_OR_RETURN(Value cond, eval(*stmt.conditions[i], frame));
                if (cond.truthy()) return render_body(stmt.bodies[i], frame, out);
            }
            return render_body(stmt.else_body, frame, out);
        }
        case StmtKind::kFor: return render_for(stmt, frame, out);
        case StmtKind::kSet: {
            TACO_ASSIGN_OR_RETURN(Value v, eval(*stmt.expr, frame));
            TACO_RETURN_IF_ERROR(render_set(stmt, frame, v));
            return Flow::kNormal;
        }
        case StmtKind::kSetBlock: {
            std::string captured;
            TACO_RETURN_IF_ERROR(render(stmt.body, frame, captured));
            Value v = Value::string(std::move(captured));
            if (stmt.filter) {
                auto inner = std::make_shared<Frame>(frame);
                inner->set("\x01body", v);
                TACO_ASSIGN_OR_RETURN(v, eval(*stmt.filter, inner));
            }
            TACO_RETURN_IF_ERROR(render_set(stmt, frame, v));
            return Flow::kNormal;
        }
        case StmtKind::kMacro: frame->set(stmt.name, make_macro(stmt, frame, Value())); return Flow::kNormal;
        case StmtKind::kCallBlock: {
            const Expr& call = *stmt.expr;
            TACO_ASSIGN_OR_RETURN(Value callee, eval(*call.children[0], frame));
            TACO_ASSIGN_OR_RETURN(CallArgs args, eval_args(call, 1, frame));
            args.keyword.emplace_back("caller", make_macro(stmt, frame, Value()));
            TACO_ASSIGN_OR_RETURN(Value v, callee.call(args, *this));
            TACO_RETURN_IF_ERROR(append_output(out, v.str()));
            return Flow::kNormal;
        }
        case StmtKind::kFilterBlock: {
            std::string captured;
            TACO_RETURN_IF_ERROR(render(stmt.body, frame, captured));
            auto inner = std::make_shared<Frame>(frame);
            inner->set("\x01body", Value::string(std::move(captured)));
            TACO_ASSIGN_OR_RETURN(Value v, eval(*stmt.filter, inner));
            TACO_RETURN_IF_ERROR(append_output(out, v.str()));
            return Flow::kNormal;
        }
        case StmtKind::kBreak: return Flow::kBreak;
        case StmtKind::kContinue: return Flow::kContinue;
        case StmtKind::kBody: return render_body(stmt.body, frame, out);
    }
    return Flow::kNormal;
}

Status Evaluator::render_set(const Stmt& stmt, const std::shared_ptr<Frame>& frame, const Value& value) {
    // Values persist across loop iterations only through namespaces; bounding depth there bounds every value.
    if (value.depth() > kMaxValueDepth) return Status::error("value nested too deeply");
    if (!stmt.attr_target.empty()) {
        const Value* target = frame->lookup(stmt.targets[0]);
        if (!target || !target->is_namespace()) return Status::error("cannot assign attribute on non-namespace object");
        if (value.contains_namespace()) return Status::error("storing a namespace inside a namespace is not supported");
        target->namespace_dict().set(Value::string(stmt.attr_target), value);
        return Status::ok();
    }
    if (stmt.targets.size() == 1) {
        frame->set(stmt.targets[0], value);
        return Status::ok();
    }
    TACO_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
    if (items.size() != stmt.targets.size())
        return error("cannot unpack {} values into {} names", items.size(), stmt.targets.size());
    for (size_t i = 0; i < items.size(); ++i) frame->set(stmt.targets[i], items[i]);
    return Status::ok();
}

Result<Evaluator::Flow> Evaluator::render_for(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string& out) {
    TACO_ASSIGN_OR_RETURN(Value iterable, eval(*stmt.expr, frame));
    TACO_ASSIGN_OR_RETURN(std::vector<Value> all, iterate(iterable));
    auto bind_targets = [&](Frame& f, const Value& item) -> Status {
        if (stmt.targets.size() == 1) {
            f.set(stmt.targets[0], item);
            return Status::ok();
        }
        TACO_ASSIGN_OR_RETURN(std::vector<Value> parts, iterate(item));
        if (parts.size() != stmt.targets.size())
            return error("cannot unpack {} values into {} loop variables", parts.size(), stmt.targets.size());
        for (size_t i = 0; i < parts.size(); ++i) f.set(stmt.targets[i], parts[i]);
        return Status::ok();
    };
    std::vector<Value> items;
    if (stmt.condition) {
        for (const Value& item : all) {
            TACO_RETURN_IF_ERROR(count_step());
            auto probe = std::make_shared<Frame>(frame);
            TACO_RETURN_IF_ERROR(bind_targets(*probe, item));
            TACO_ASSIGN_OR_RETURN(Value keep, eval(*stmt.condition, probe));
            if (keep.truthy()) items.push_back(item);
        }
    } else {
        items = std::move(all);
    }
    // jinja2 runs the else block unless some iteration ran its body to the end (no break/continue out of it).
    bool run_else = true;
    auto changed = std::make_shared<std::optional<std::vector<Value>>>();
    for (size_t i = 0; i < items.size(); ++i) {
        TACO_RETURN_IF_ERROR(count_step());
        auto inner = std::make_shared<Frame>(frame);
        inner->set("loop", make_loop(i, items.size(), items, changed));
        TACO_RETURN_IF_ERROR(bind_targets(*inner, items[i]));
        TACO_ASSIGN_OR_RETURN(Flow flow, render_body(stmt.body, inner, out));
        if (flow == Flow::kBreak) break;
        if (flow == Flow::kNormal) run_else = false;
    }
    if (run_else) return render_body(stmt.else_body, frame, out);
    return Flow::kNormal;
}

Value Evaluator::make_macro(const Stmt& stmt, const std::shared_ptr<Frame>& frame, Value caller) {
    const Stmt* def = &stmt;
    std::weak_ptr<Frame> weak = frame;  // a macro stored in its own frame must not keep that frame alive
    std::string name = stmt.kind == StmtKind::kMacro ? stmt.name : "caller";
    return Value::callable(name, [def, weak, name](CallArgs& args, Evaluator& ev) -> Result<Value> {
        std::shared_ptr<Frame> closure = weak.lock();
        if (!closure) return Status::error("macro '" + name + "' called after its scope ended");
        if (ev.call_depth_ >= ev.limits_.max_call_depth) return Status::error("maximum macro recursion depth exceeded");
        auto inner = std::make_shared<Frame>(closure);
        if (args.positional.size() > def->params.size())
            return error("macro '{}' takes not more than {} argument(s)", name, def->params.size());
        std::vector<bool> given(def->params.size(), false);
        for (size_t i = 0; i < args.positional.size(); ++i) {
            inner->set(def->params[i], args.positional[i]);
            given[i] = true;
        }
        for (const auto& [key, value] : args.keyword) {
            if (key == "caller") {  // passed implicitly by {% call %}
                inner->set(key, value);
                continue;
            }
            size_t i = 0;
            while (i < def->params.size() && def->params[i] != key) ++i;
            if (i == def->params.size()) return error("macro '{}' has no argument named '{}'", name, key);
            inner->set(key, value);
            given[i] = true;
        }
        for (size_t i = 0; i < def->params.size(); ++i) {
            if (given[i]) continue;
            if (def->defaults[i]) {
                TACO_ASSIGN_OR_RETURN(Value v, ev.eval(*def->defaults[i], inner));
                inner->set(def->params[i], v);
            } else {
                inner->set(def->params[i], Value::undefined(def->params[i]));
            }
        }
        std::string out;
        ++ev.call_depth_;
        Status st = ev.render(def->body, inner, out);
        --ev.call_depth_;
        TACO_RETURN_IF_ERROR(st);
        return Value::string(std::move(out));
    });
}

Result<CallArgs> Evaluator::eval_args(const Expr& expr, size_t first, const std::shared_ptr<Frame>& frame) {
    CallArgs args;
    for (size_t i = first; i < expr.children.size(); ++i) {
        TACO_ASSIGN_OR_RETURN(Value v, eval(*expr.children[i], frame));
        args.positional.push_back(std::move(v));
    }
    for (const auto& [key, value_expr] : expr.keyword) {
        TACO_ASSIGN_OR_RETURN(Value v, eval(*value_expr, frame));
        args.keyword.emplace_back(key, std::move(v));
    }
    return args;
}

Result<Value> Evaluator::apply_filter(const std::string& name, const Value& value, CallArgs& args) {
    return call_filter(name, value, args, *this);
}

Result<bool> Evaluator::apply_test(const std::string& name, const Value& value, CallArgs& args) {
    return call_test(name, value, args, *this);
}

Result<Value> Evaluator::get_attribute(const Value& object, const std::string& name) {
    switch (object.kind()) {
        case ValueKind::kUndefined: return Status::error(object.undefined_message());
        case ValueKind::kDict: {
            if (is_dict_method(name)) {
                Value self = object;
                return Value::callable(
                    name, [self, name](CallArgs& args, Evaluator&) { return call_dict_method(self, name, args); });
            }
            if (is_unsafe_method(object, name))
                return Value::undefined(name,
                                        fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
            if (const Value* v = object.as_dict().find(name)) return *v;
            return Value::undefined(name, fmt::format("'dict object' has no attribute '{}'", name));
        }
        case ValueKind::kNamespace: {
            if (const Value* v = object.namespace_dict().find(name)) return *v;
            return Value::undefined(name, fmt::format("'Namespace object' has no attribute '{}'", name));
        }
        case ValueKind::kString:
            if (is_string_method(name)) {
                Value self = object;
                return Value::callable(name, [self, name](CallArgs& args, Evaluator&) {
                    return call_string_method(self.as_string(), name, args);
                });
            }
            break;
        case ValueKind::kList:
        case ValueKind::kTuple:
            if (is_list_method(name)) {
                Value self = object;
                return Value::callable(
                    name, [self, name](CallArgs& args, Evaluator&) { return call_list_method(self, name, args); });
            }
            if (is_unsafe_method(object, name))
                return Value::undefined(
                    name, fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, object.type_name()));
            break;
        default: break;
    }
    return Value::undefined(name, fmt::format("'{}' object has no attribute '{}'", object.type_name(), name));
}

Result<Value> Evaluator::get_item(const Value& object, const Value& key) {
    switch (object.kind()) {
        case ValueKind::kUndefined: return Status::error(object.undefined_message());
        case ValueKind::kDict:
            if (const Value* v = object.as_dict().find(key)) return *v;
            break;
        case ValueKind::kNamespace:
            if (key.is_string()) return get_attribute(object, key.as_string());
            break;
        case ValueKind::kList:
        case ValueKind::kTuple:
            if (key.is_int() || key.is_bool()) {
                int64_t n = static_cast<int64_t>(object.items().size());
                int64_t i = key.as_int();
                if (i < 0) i += n;
                if (i >= 0 && i < n) return object.items()[static_cast<size_t>(i)];
            }
            break;
        case ValueKind::kString:
            if (key.is_int() || key.is_bool()) {
                std::vector<char32_t> cps = to_code_points(object.as_string());
                int64_t n = static_cast<int64_t>(cps.size());
                int64_t i = key.as_int();
                if (i < 0) i += n;
                if (i >= 0 && i < n) {
                    std::string s;
                    append_utf8(cps[static_cast<size_t>(i)], s);
                    return Value::string(std::move(s));
                }
            }
            break;
        default: break;
    }
    if (key.is_string()) return get_attribute(object, key.as_string());
    return Value::undefined("", fmt::format("'{}' object has no element {}", object.type_name(), key.repr()));
}

Result<Value> Evaluator::eval_slice(const Expr& expr, const std::shared_ptr<Frame>& frame) {
    TACO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], frame));
    Value bounds[3] = {Value::none(), Value::none(), Value::none()};
    for (int i = 0; i < 3; ++i) {
        if (expr.children[i + 1]) {
            TACO_ASSIGN_OR_RETURN(bounds[i], eval(*expr.children[i + 1], frame));
        }
    }
    if (object.is_undefined()) return Status::error(object.undefined_message());
    Status status;
    if (object.is_string()) {
        std::vector<char32_t> cps = to_code_points(object.as_string());
        auto idx = slice_indices(static_cast<int64_t>(cps.size()), bounds[0], bounds[1], bounds[2], &status);
        TACO_RETURN_IF_ERROR(status);
        std::string s;
        for (size_t i : idx) append_utf8(cps[i], s);
        return Value::string(std::move(s));
    }
    if (object.is_sequence()) {
        auto idx = slice_indices(static_cast<int64_t>(object.items().size()), bounds[0], bounds[1], bounds[2], &status);
        TACO_RETURN_IF_ERROR(status);
        std::vector<Value> items;
        items.reserve(idx.size());
        for (size_t i : idx) items.push_back(object.items()[i]);
        return object.kind() == ValueKind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    return Value::undefined("", fmt::format("'{}' object is not subscriptable", object.type_name()));
}

Result<Value> Evaluator::eval(const Expr& expr, const std::shared_ptr<Frame>& frame) {
    if (++eval_depth_ > kMaxEvalDepth) {
        --eval_depth_;
        return Status::error("expression evaluation too deep");
    }
    struct DepthGuard {
        int& depth;
        ~DepthGuard() { --depth; }
    } guard{eval_depth_};
    switch (expr.kind) {
        case ExprKind::kLiteral: return expr.literal;
        case ExprKind::kName: {
            if (const Value* v = frame->lookup(expr.name)) return *v;
            return Value::undefined(expr.name);
        }
        case ExprKind::kList:
        case ExprKind::kTuple: {
            std::vector<Value> items;
            for (const auto& child : expr.children) {
                TACO_ASSIGN_OR_RETURN(Value v, eval(*child, frame));
                items.push_back(std::move(v));
            }
            return expr.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
        }
        case ExprKind::kDict: {
            ValueDict d;
            for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
                TACO_ASSIGN_OR_RETURN(Value k, eval(*expr.children[i], frame));
                TACO_ASSIGN_OR_RETURN(Value v, eval(*expr.children[i + 1], frame));
                if (k.is_sequence() && k.kind() != ValueKind::kTuple) return Status::error("unhashable type: 'list'");
                if (k.is_dict()) return Status::error("unhashable type: 'dict'");
                d.set(k, std::move(v));
            }
            return Value::dict(std::move(d));
        }
        case ExprKind::kGetattr: {
            TACO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], frame));
            return get_attribute(object, expr.name);
        }
        case ExprKind::kGetitem: {
            TACO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], frame));
            TACO_ASSIGN_OR_RETURN(Value key, eval(*expr.children[1], frame));
            return get_item(object, key);
        }
        case ExprKind::kSlice: return eval_slice(expr, frame);
        case ExprKind::kCall: {
            TACO_ASSIGN_OR_RETURN(Value callee, eval(*expr.children[0], frame));
            TACO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
            TACO_RETURN_IF_ERROR(count_step());
            return callee.call(args, *this);
        }
        case ExprKind::kFilter: {
            Value value;
            if (expr.children[0]) {
                TACO_ASSIGN_OR_RETURN(value, eval(*expr.children[0], frame));
            } else if (const Value* body = frame->lookup("\x01body")) {
                value = *body;
            }
            TACO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
            return call_filter(expr.name, value, args, *this);
        }
        case ExprKind::kTest: {
            TACO_ASSIGN_OR_RETURN(Value value, eval(*expr.children[0], frame));
            TACO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, frame));
            TACO_ASSIGN_OR_RETURN(bool result, call_test(expr.name, value, args, *this));
            return Value::boolean(result != expr.negated);
        }
        case ExprKind::kUnary: {
            TACO_ASSIGN_OR_RETURN(Value v, eval(*expr.children[0], frame));
            if (expr.name == "not") return Value::boolean(!v.truthy());
            if (v.is_undefined()) return Status::error(v.undefined_message());
            if (!v.is_number()) return error("bad operand type for unary {}: '{}'", expr.name, v.type_name());
            if (expr.name == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
            if (v.is_float()) return Value::floating(-v.as_double());
            if (v.as_int() == INT64_MIN) return Status::error("integer overflow");
            return Value::integer(-v.as_int());
        }
        case ExprKind::kBinary: return eval_binary(expr, frame);
        case ExprKind::kConcat: {
            std::string s;
            for (const auto& child : expr.children) {
                TACO_ASSIGN_OR_RETURN(Value v, eval(*child, frame));
                s += v.str();
                if (s.size() > limits_.max_output_bytes) return Status::error("string too long");
            }
            return Value::string(std::move(s));
        }
        case ExprKind::kCompare: return eval_compare(expr, frame);
        case ExprKind::kCondition: {
            TACO_ASSIGN_OR_RETURN(Value cond, eval(*expr.children[1], frame));
            if (cond.truthy()) return eval(*expr.children[0], frame);
            if (expr.children[2]) return eval(*expr.children[2], frame);
            return Value::undefined("", "the inline if-expression evaluated to false and no else section was defined.");
        }
    }
    return Value();
}

Result<Value> Evaluator::eval_binary(const Expr& expr, const std::shared_ptr<Frame>& frame) {
    TACO_ASSIGN_OR_RETURN(Value left, eval(*expr.children[0], frame));
    if (expr.name == "and") {
        if (!left.truthy()) return left;
        return eval(*expr.children[1], frame);
    }
    if (expr.name == "or") {
        if (left.truthy()) return left;
        return eval(*expr.children[1], frame);
    }
    TACO_ASSIGN_OR_RETURN(Value right, eval(*expr.children[1], frame));
    return binary_op(expr.name, left, right, limits_.max_output_bytes);
}

Result<Value> Evaluator::eval_compare(const Expr& expr, const std::shared_ptr<Frame>& frame) {
    TACO_ASSIGN_OR_RETURN(Value left, eval(*expr.children[0], frame));
    for (size_t i = 0; i < expr.ops.size(); ++i) {
        TACO_ASSIGN_OR_RETURN(Value right, eval(*expr.children[i + 1], frame));
        const std::string& op = expr.ops[i];
        bool result = false;
        if (op == "==") {
            result = values_equal(left, right);
        } else if (op == "!=") {
            result = !values_equal(left, right);
        } else if (op == "in" || op == "notin") {
            TACO_ASSIGN_OR_RETURN(bool found, contains(right, left));
            result = (op == "in") == found;
        } else {
            if (left.is_undefined()) return Status::error(left.undefined_message());
            if (right.is_undefined()) return Status::error(right.undefined_message());
            if (op == "<") {
                TACO_ASSIGN_OR_RETURN(result, value_less(left, right));
            } else if (op == ">") {
                TACO_ASSIGN_OR_RETURN(result, value_less(right, left));
            } else if (op == "<=") {
                TACO_ASSIGN_OR_RETURN(bool greater, value_less(right, left));
                result = !greater;
            } else {
                TACO_ASSIGN_OR_RETURN(bool less, value_less(left, right));
                result = !less;
            }
        }
        if (!result) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

}  // namespace taco::jinja
