// Evaluator: renders a parsed template. Scoping follows jinja2: each for-loop iteration and each macro call
// gets a fresh frame (assignments inside do not leak out, hence namespace()); if-blocks share their frame.
// Work is bounded (output size, steps, call depth) so hostile templates end in a Status, never a crash or hang.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/limits.h"
#include "core/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace taco::jinja {

class Frame {
public:
    explicit Frame(std::shared_ptr<Frame> parent) : parent_(std::move(parent)) {}
    // Innermost binding of name, or nullptr.
    const Value* lookup(const std::string& name) const;
    void set(const std::string& name, Value value);

private:
    std::shared_ptr<Frame> parent_;
    std::unordered_map<std::string, Value> vars_;  // hashed: a context may hold many chat_template_kwargs
};

// Defaults: core/limits.h. List and built-size limits are enforced by Value's constructors (value.h,
// RenderBudgetScope), which every list and string a template builds goes through.
struct RenderLimits {
    size_t max_output_bytes = limits::kMaxTemplateOutputBytes;
    int64_t max_steps = limits::kMaxTemplateSteps;  // statements + loop iterations + calls (~1 us each)
    int max_call_depth = 100;
    size_t max_list_items = limits::kMaxTemplateListItems;
    int64_t max_built_items = limits::kMaxTemplateBuiltItems;
    int64_t max_built_bytes = limits::kMaxTemplateBuiltBytes;
};

// Named-or-positional argument binding, as Python binds f(a, b=1, c=2).
class BoundArgs {
public:
    // names: parameter names in order; the first num_required must be given.
    static Result<BoundArgs> bind(const CallArgs& args, const std::vector<std::string>& names, size_t num_required,
                                  const std::string& function);
    bool has(size_t i) const { return values_[i].has_value(); }
    const Value& get(size_t i) const { return *values_[i]; }
    Value get_or(size_t i, Value fallback) const { return values_[i] ? *values_[i] : std::move(fallback); }

private:
    std::vector<std::optional<Value>> values_;
};

class Evaluator {
public:
    Evaluator(RenderLimits limits, std::optional<int64_t> now_epoch_seconds)
        : limits_(limits), now_epoch_seconds_(now_epoch_seconds) {}

    Status render(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out);
    Result<Value> eval(const Expr& expr, const std::shared_ptr<Frame>& frame);

    // Used by filters such as map/select that apply other filters and tests.
    Result<Value> apply_filter(const std::string& name, const Value& value, CallArgs& args);
    Result<bool> apply_test(const std::string& name, const Value& value, CallArgs& args);
    Result<Value> get_attribute(const Value& object, const std::string& name);
    Result<Value> get_item(const Value& object, const Value& key);

    Status count_step();
    std::optional<int64_t> now_epoch_seconds() const { return now_epoch_seconds_; }
    const RenderLimits& limits() const { return limits_; }

private:
    enum class Flow { kNormal, kBreak, kContinue };

    Result<Flow> render_body(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out);
    Result<Flow> render_stmt(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string& out);
    Result<Flow> render_for(const Stmt& stmt, const std::shared_ptr<Frame>& frame, std::string& out);
    Status render_set(const Stmt& stmt, const std::shared_ptr<Frame>& frame, const Value& value);
    Value make_macro(const Stmt& stmt, const std::shared_ptr<Frame>& frame, Value caller);
    Result<CallArgs> eval_args(const Expr& expr, size_t first, const std::shared_ptr<Frame>& frame);
    Result<Value> eval_binary(const Expr& expr, const std::shared_ptr<Frame>& frame);
    Result<Value> eval_compare(const Expr& expr, const std::shared_ptr<Frame>& frame);
    Result<Value> eval_slice(const Expr& expr, const std::shared_ptr<Frame>& frame);
    Status append_output(std::string& out, const std::string& text);

    RenderLimits limits_;
    std::optional<int64_t> now_epoch_seconds_;
    int64_t steps_ = 0;
    int call_depth_ = 0;
    int eval_depth_ = 0;
};

// Python semantics of binary operators on values (+ - * / // % **, `in`).
Result<Value> binary_op(const std::string& op, const Value& a, const Value& b, size_t max_bytes);
Result<bool> contains(const Value& container, const Value& item);
// Iterating a value as a Jinja for-loop does (dict -> keys, str -> characters, undefined -> nothing).
Result<std::vector<Value>> iterate(const Value& value);

}  // namespace taco::jinja
