// The template syntax tree. Nodes are small tagged structs; each kind documents which fields it uses.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace taco::jinja {

enum class ExprKind {
    kLiteral,   // literal
    kName,      // name
    kList,      // children = items
    kTuple,     // children = items
    kDict,      // children = k0, v0, k1, v1, ...
    kGetattr,   // children[0] = object, name = attribute
    kGetitem,   // children[0] = object, children[1] = key
    kSlice,     // children[0] = object, children[1..3] = start, stop, step (null when omitted)
    kCall,      // children[0] = callee, children[1..] = positional, keyword = named arguments
    kFilter,    // children[0] = value (null inside {% filter %}), name = filter, children[1..] / keyword = arguments
    kTest,      // children[0] = value, name = test, children[1..] = arguments, negated
    kUnary,     // op = "-", "+", "not"; children[0]
    kBinary,    // op = + - * / // % ** and or; children[0], children[1]
    kConcat,    // children joined by ~
    kCompare,   // children[0] op[0] children[1] op[1] children[2] ... (ops: == != < <= > >= in notin)
    kCondition  // children[0] = then-value, children[1] = condition, children[2] = else-value (may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    ExprKind kind;
    int line = 0;
    Value literal;
    std::string name;
    std::vector<std::string> ops;
    bool negated = false;
    int depth = 1;  // height of this subtree, bounded by the parser so evaluation and destruction recurse safely
    std::vector<ExprPtr> children;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
};

enum class StmtKind {
    kData,         // text
    kEmit,         // expr
    kIf,           // branches (conditions[i] guards bodies[i]); else_body
    kFor,          // targets, expr = iterable, condition = inline `if` (may be null), body, else_body
    kSet,          // targets (or attr_target), expr
    kSetBlock,     // targets[0], body, filter (may be null: a kFilter expr whose value is the body)
    kMacro,        // name, params (+ defaults), body
    kCallBlock,    // expr = the call, params = caller's parameters, body = caller's body
    kFilterBlock,  // filter = kFilter chain applied to the body's output, body
    kBreak,
    kContinue,
    kBody  // body (e.g. {% generation %})
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;
    std::string name;
    ExprPtr expr;
    ExprPtr condition;
    ExprPtr filter;
    std::vector<std::string> targets;
    std::string attr_target;  // {% set ns.attr = ... %}: targets[0] = "ns", attr_target = "attr"
    std::vector<ExprPtr> conditions;
    std::vector<Body> bodies;
    Body body;
    Body else_body;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // aligned with params; null = required
};

}  // namespace taco::jinja
