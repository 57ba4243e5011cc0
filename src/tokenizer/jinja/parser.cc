#include "tokenizer/jinja/parser.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/limits.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/tests.h"

namespace taco::jinja {

namespace {

// Deeper nesting than this is refused instead of risking the C++ stack (jinja2 would hit Python's limit).
constexpr int kMaxNesting = limits::kMaxTemplateNesting;
// Longest chain of operators/filters/postfix operations in one expression (a+b+c+..., x|f|g|..., a.b.c...).
constexpr int kMaxExprDepth = limits::kMaxTemplateExprDepth;

class Parser {
public:
    explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

    Result<Body> parse() {
        Body body;
        std::string end;
        TACO_RETURN_IF_ERROR(parse_body(body, {}, &end));
        return body;
    }

private:
    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    void advance() {
        if (pos_ + 1 < tokens_.size()) ++pos_;
    }
    bool is_op(const char* op) const { return current().type == TokenType::kOperator && current().value == op; }
    bool is_name(const char* name) const { return current().type == TokenType::kName && current().value == name; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(const char* name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }
    Status fail(const std::string& message) const { return error("line {}: {}", current().line, message); }
    std::string describe() const {
        switch (current().type) {
            case TokenType::kEof: return "end of template";
            case TokenType::kBlockEnd: return "end of statement block";
            case TokenType::kVariableEnd: return "end of print statement";
            case TokenType::kString: return "string";
            default: return "'" + current().value + "'";
        }
    }
    Status expect_op(const char* op) {
        if (skip_op(op)) return Status::ok();
        return fail(fmt::format("expected token '{}', got {}", op, describe()));
    }
    Status expect_block_end() {
        if (current().type == TokenType::kBlockEnd) {
            advance();
            return Status::ok();
        }
        return fail(fmt::format("expected end of statement block, got {}", describe()));
    }
    Result<std::string> expect_name() {
        if (current().type != TokenType::kName) return fail(fmt::format("expected a name, got {}", describe()));
        std::string name = current().value;
        advance();
        return name;
    }

    // Parses statements until `{% <one of ends> %}` (left unconsumed, its name in *end) or end of template.
    Status parse_body(Body& body, const std::vector<std::string>& ends, std::string* end) {
        if (++depth_ > kMaxNesting) return fail("template nesting too deep");
        while (true) {
            const Token& tok = current();
            if (tok.type == TokenType::kEof) {
                --depth_;
                if (ends.empty()) return Status::ok();
                return fail(fmt::format("unexpected end of template; expected '{}'", ends.back()));
            }
            if (tok.type == TokenType::kData) {
                auto stmt = make_stmt(StmtKind::kData);
                stmt->text = tok.value;
                body.push_back(std::move(stmt));
                advance();
                continue;
            }
            if (tok.type == TokenType::kVariableBegin) {
                advance();
                auto stmt = make_stmt(StmtKind::kEmit);
                TACO_ASSIGN_OR_RETURN(stmt->expr, parse_tuple_expression(true));
                if (current().type != TokenType::kVariableEnd)
                    return fail(fmt::format("expected end of print statement, got {}", describe()));
                advance();
                TACO_RETURN_IF_ERROR(flush_unknown());
                body.push_back(std::move(stmt));
                continue;
            }
            if (tok.type != TokenType::kBlockBegin) return fail(fmt::format("unexpected {}", describe()));
            advance();
            if (current().type != TokenType::kName) return fail("tag name expected");
            std::string tag = current().value;
            for (const auto& e : ends) {
                if (tag == e) {
                    *end = tag;
                    --depth_;
                    return Status::ok();
                }
            }
            TACO_ASSIGN_OR_RETURN(StmtPtr stmt, parse_statement(tag));
            TACO_RETURN_IF_ERROR(flush_unknown());
            if (stmt) body.push_back(std::move(stmt));
        }
    }

    StmtPtr make_stmt(StmtKind kind) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = kind;
        stmt->line = current().line;
        return stmt;
    }

    Result<StmtPtr> parse_statement(const std::string& tag) {
        int line = current().line;
        advance();  // tag name
        StmtPtr stmt;
        if (tag == "if") {
            TACO_ASSIGN_OR_RETURN(stmt, parse_if());
        } else if (tag == "for") {
            TACO_ASSIGN_OR_RETURN(stmt, parse_for());
        } else if (tag == "set") {
            TACO_ASSIGN_OR_RETURN(stmt, parse_set());
        } else if (tag == "macro") {
            TACO_ASSIGN_OR_RETURN(stmt, parse_macro());
        } else if (tag == "call") {
            TACO_ASSIGN_OR_RETURN(stmt, parse_call_block());
        } else if (tag == "filter") {
            stmt = make_stmt(StmtKind::kFilterBlock);
            TACO_ASSIGN_OR_RETURN(stmt->filter, parse_filter_chain(nullptr));
            TACO_RETURN_IF_ERROR(expect_block_end());
            TACO_RETURN_IF_ERROR(parse_block_body(stmt->body, "endfilter"));
        } else if (tag == "generation") {
            stmt = make_stmt(StmtKind::kBody);
            TACO_RETURN_IF_ERROR(expect_block_end());
            TACO_RETURN_IF_ERROR(parse_block_body(stmt->body, "endgeneration"));
        } else if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) return error("line {}: '{}' outside of a loop", line, tag);
            stmt = make_stmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue);
            TACO_RETURN_IF_ERROR(expect_block_end());
        } else {
            return error("line {}: encountered unknown tag '{}'", line, tag);
        }
        stmt->line = line;
        return stmt;
    }

    // Body up to {% <end> %}, consuming the end tag.
    Status parse_block_body(Body& body, const std::string& end_tag) {
        std::string end;
        TACO_RETURN_IF_ERROR(parse_body(body, {end_tag}, &end));
        advance();
        return expect_block_end();
    }

    Result<StmtPtr> parse_if() {
        auto stmt = make_stmt(StmtKind::kIf);
        while (true) {
            TACO_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple_expression(false));
            TACO_RETURN_IF_ERROR(flush_unknown());
            TACO_RETURN_IF_ERROR(expect_block_end());
            stmt->conditions.push_back(std::move(cond));
            stmt->bodies.emplace_back();
            std::string end;
            ++conditional_depth_;
            Status st = parse_body(stmt->bodies.back(), {"elif", "else", "endif"}, &end);
            --conditional_depth_;
            TACO_RETURN_IF_ERROR(st);
            advance();
            if (end == "elif") continue;
            if (end == "else") {
                TACO_RETURN_IF_ERROR(expect_block_end());
                ++conditional_depth_;
                st = parse_body(stmt->else_body, {"endif"}, &end);
                --conditional_depth_;
                TACO_RETURN_IF_ERROR(st);
                advance();
            }
            TACO_RETURN_IF_ERROR(expect_block_end());
            return stmt;
        }
    }

    Status parse_targets(std::vector<std::string>& targets) {
        bool parens = skip_op("(");
        while (true) {
            TACO_ASSIGN_OR_RETURN(std::string name, expect_name());
            targets.push_back(name);
            if (!skip_op(",")) break;
            if (current().type != TokenType::kName) break;
        }
        if (parens) TACO_RETURN_IF_ERROR(expect_op(")"));
        return Status::ok();
    }

    Result<StmtPtr> parse_for() {
        auto stmt = make_stmt(StmtKind::kFor);
        TACO_RETURN_IF_ERROR(parse_targets(stmt->targets));
        if (!skip_name("in")) return fail(fmt::format("expected 'in', got {}", describe()));
        TACO_ASSIGN_OR_RETURN(stmt->expr, parse_tuple_expression(false));
        if (skip_name("if")) {
            TACO_ASSIGN_OR_RETURN(stmt->condition, parse_expression(true));
        }
        if (is_name("recursive")) return fail("recursive loops are not supported");
        TACO_RETURN_IF_ERROR(flush_unknown());
        TACO_RETURN_IF_ERROR(expect_block_end());
        std::string end;
        ++loop_depth_;
        Status st = parse_body(stmt->body, {"else", "endfor"}, &end);
        --loop_depth_;
        TACO_RETURN_IF_ERROR(st);
        advance();
        if (end == "else") {
            TACO_RETURN_IF_ERROR(expect_block_end());
            TACO_RETURN_IF_ERROR(parse_body(stmt->else_body, {"endfor"}, &end));
            advance();
        }
        TACO_RETURN_IF_ERROR(expect_block_end());
        return stmt;
    }

    Result<StmtPtr> parse_set() {
        auto stmt = make_stmt(StmtKind::kSet);
        TACO_ASSIGN_OR_RETURN(std::string first, expect_name());
        stmt->targets.push_back(first);
        if (skip_op(".")) {
            TACO_ASSIGN_OR_RETURN(stmt->attr_target, expect_name());
        } else {
            while (skip_op(",")) {
                TACO_ASSIGN_OR_RETURN(std::string name, expect_name());
                stmt->targets.push_back(name);
            }
        }
        if (skip_op("=")) {
            TACO_ASSIGN_OR_RETURN(stmt->expr, parse_tuple_expression(true));
            TACO_RETURN_IF_ERROR(expect_block_end());
            return stmt;
        }
        if (stmt->targets.size() != 1 || !stmt->attr_target.empty())
            return fail(fmt::format("expected token '=', got {}", describe()));
        stmt->kind = StmtKind::kSetBlock;
        if (skip_op("|")) {
            TACO_ASSIGN_OR_RETURN(stmt->filter, parse_filter_chain(nullptr));
        }
        TACO_RETURN_IF_ERROR(expect_block_end());
        TACO_RETURN_IF_ERROR(parse_block_body(stmt->body, "endset"));
        return stmt;
    }

    Status parse_params(Stmt& stmt) {
        TACO_RETURN_IF_ERROR(expect_op("("));
        while (!is_op(")")) {
            if (!stmt.params.empty()) TACO_RETURN_IF_ERROR(expect_op(","));
            if (is_op(")")) break;
            TACO_ASSIGN_OR_RETURN(std::string name, expect_name());
            stmt.params.push_back(name);
            ExprPtr def;
            if (skip_op("=")) {
                TACO_ASSIGN_OR_RETURN(def, parse_expression(true));
            } else if (!stmt.defaults.empty() && stmt.defaults.back()) {
                return fail("non-default argument follows default argument");
            }
            stmt.defaults.push_back(std::move(def));
        }
        return expect_op(")");
    }

    Result<StmtPtr> parse_macro() {
        auto stmt = make_stmt(StmtKind::kMacro);
        TACO_ASSIGN_OR_RETURN(stmt->name, expect_name());
        TACO_RETURN_IF_ERROR(parse_params(*stmt));
        TACO_RETURN_IF_ERROR(expect_block_end());
        int saved_loop_depth = loop_depth_;
        loop_depth_ = 0;
        Status st = parse_block_body(stmt->body, "endmacro");
        loop_depth_ = saved_loop_depth;
        TACO_RETURN_IF_ERROR(st);
        return stmt;
    }

    Result<StmtPtr> parse_call_block() {
        auto stmt = make_stmt(StmtKind::kCallBlock);
        if (is_op("(")) TACO_RETURN_IF_ERROR(parse_params(*stmt));
        TACO_ASSIGN_OR_RETURN(stmt->expr, parse_expression(true));
        if (stmt->expr->kind != ExprKind::kCall) return fail("expected call");
        TACO_RETURN_IF_ERROR(flush_unknown());
        TACO_RETURN_IF_ERROR(expect_block_end());
        TACO_RETURN_IF_ERROR(parse_block_body(stmt->body, "endcall"));
        return stmt;
    }

    // ---- expressions ----

    // Records the subtree height of a freshly built node (children already have theirs) and refuses too-deep trees.
    Status fix_depth(Expr& node) {
        int depth = 0;
        for (const auto& child : node.children)
            if (child) depth = std::max(depth, child->depth);
        for (const auto& [key, child] : node.keyword)
            if (child) depth = std::max(depth, child->depth);
        node.depth = depth + 1;
        if (node.depth > kMaxExprDepth) return fail("expression too deeply nested or too long a chain");
        return Status::ok();
    }

    ExprPtr make_expr(ExprKind kind, int line) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = line;
        return e;
    }

    // Unknown filters/tests are load-time errors unless they sit in conditional code.
    void note_unknown(const std::string& what) {
        if (conditional_depth_ == 0) unknown_.push_back(fmt::format("line {}: {}", current().line, what));
    }
    Status flush_unknown() {
        if (unknown_.empty()) return Status::ok();
        std::string message = unknown_.front();
        unknown_.clear();
        return Status::error(message);
    }

    // An expression, or a bare tuple `a, b` (as in {{ a, b }} and {% set x = a, b %}).
    Result<ExprPtr> parse_tuple_expression(bool with_condexpr) {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
        if (!is_op(",")) return first;
        auto tuple = make_expr(ExprKind::kTuple, line);
        tuple->children.push_back(std::move(first));
        while (skip_op(",")) {
            if (current().type == TokenType::kBlockEnd || current().type == TokenType::kVariableEnd) break;
            TACO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
            tuple->children.push_back(std::move(item));
        }
        TACO_RETURN_IF_ERROR(fix_depth(*tuple));
        return tuple;
    }

    Result<ExprPtr> parse_expression(bool with_condexpr) {
        if (++depth_ > kMaxNesting) return fail("expression nesting too deep");
        Result<ExprPtr> result = with_condexpr ? parse_condexpr() : parse_or();
        --depth_;
        return result;
    }

    Result<ExprPtr> parse_condexpr() {
        int line = current().line;
        size_t n0 = unknown_.size();
        TACO_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
        while (is_name("if")) {
            size_t n1 = unknown_.size();
            advance();
            TACO_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
            size_t n2 = unknown_.size();
            ExprPtr otherwise;
            if (skip_name("else")) {
                TACO_ASSIGN_OR_RETURN(otherwise, parse_condexpr());
            }
            // Both branches are conditional code; only the condition's unknown names are load-time errors.
            std::vector<std::string> kept(unknown_.begin() + static_cast<long>(n1),
                                          unknown_.begin() + static_cast<long>(n2));
            unknown_.resize(n0);
            unknown_.insert(unknown_.end(), kept.begin(), kept.end());
            n0 = unknown_.size();
            auto node = make_expr(ExprKind::kCondition, line);
            node->children.push_back(std::move(expr));
            node->children.push_back(std::move(cond));
            node->children.push_back(std::move(otherwise));
            TACO_RETURN_IF_ERROR(fix_depth(*node));
            expr = std::move(node);
        }
        return expr;
    }

    Result<ExprPtr> parse_or() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
        while (skip_name("or")) {
            TACO_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
            TACO_ASSIGN_OR_RETURN(left, binary("or", std::move(left), std::move(right), line));
        }
        return left;
    }

    Result<ExprPtr> parse_and() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
        while (skip_name("and")) {
            TACO_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
            TACO_ASSIGN_OR_RETURN(left, binary("and", std::move(left), std::move(right), line));
        }
        return left;
    }

    Result<ExprPtr> parse_not() {
        int line = current().line;
        if (skip_name("not")) {
            if (++depth_ > kMaxNesting) return fail("expression nesting too deep");
            auto node = make_expr(ExprKind::kUnary, line);
            node->name = "not";
            auto operand = parse_not();
            --depth_;
            if (!operand.is_ok()) return operand.status();
            node->children.push_back(std::move(operand).value());
            TACO_RETURN_IF_ERROR(fix_depth(*node));
            return node;
        }
        return parse_compare();
    }

    Result<ExprPtr> binary(const char* op, ExprPtr left, ExprPtr right, int line) {
        auto node = make_expr(ExprKind::kBinary, line);
        node->name = op;
        node->children.push_back(std::move(left));
        node->children.push_back(std::move(right));
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    Result<ExprPtr> parse_compare() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
        ExprPtr node;
        while (true) {
            std::string op;
            if (current().type == TokenType::kOperator &&
                (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
                op = current().value;
                advance();
            } else if (is_name("in")) {
                op = "in";
                advance();
            } else if (is_name("not") && peek().type == TokenType::kName && peek().value == "in") {
                op = "notin";
                advance();
                advance();
            } else {
                break;
            }
            if (!node) {
                node = make_expr(ExprKind::kCompare, line);
                node->children.push_back(std::move(first));
            }
            TACO_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
            node->ops.push_back(op);
            node->children.push_back(std::move(operand));
        }
        if (!node) return first;
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    Result<ExprPtr> parse_math1() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
        while (is_op("+") || is_op("-")) {
            std::string op = current().value;
            advance();
            TACO_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
            TACO_ASSIGN_OR_RETURN(left, binary(op == "+" ? "+" : "-", std::move(left), std::move(right), line));
        }
        return left;
    }

    Result<ExprPtr> parse_concat() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr first, parse_math2());
        if (!is_op("~")) return first;
        auto node = make_expr(ExprKind::kConcat, line);
        node->children.push_back(std::move(first));
        while (skip_op("~")) {
            TACO_ASSIGN_OR_RETURN(ExprPtr next, parse_math2());
            node->children.push_back(std::move(next));
        }
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    Result<ExprPtr> parse_math2() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = current().value;
            advance();
            TACO_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
            auto node = make_expr(ExprKind::kBinary, line);
            node->name = op;
            node->children.push_back(std::move(left));
            node->children.push_back(std::move(right));
            TACO_RETURN_IF_ERROR(fix_depth(*node));
            left = std::move(node);
        }
        return left;
    }

    Result<ExprPtr> parse_pow() {
        int line = current().line;
        TACO_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
        while (skip_op("**")) {
            TACO_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
            TACO_ASSIGN_OR_RETURN(left, binary("**", std::move(left), std::move(right), line));
        }
        return left;
    }

    Result<ExprPtr> parse_unary(bool with_filter) {
        int line = current().line;
        if (++depth_ > kMaxNesting) return fail("expression nesting too deep");
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            std::string op = current().value;
            advance();
            node = make_expr(ExprKind::kUnary, line);
            node->name = op;
            auto operand = parse_unary(false);
            if (!operand.is_ok()) return operand.status();
            node->children.push_back(std::move(operand).value());
            TACO_RETURN_IF_ERROR(fix_depth(*node));
        } else {
            auto primary = parse_primary();
            if (!primary.is_ok()) return primary.status();
            node = std::move(primary).value();
        }
        --depth_;
        TACO_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
        if (with_filter) {
            TACO_ASSIGN_OR_RETURN(node, parse_filter_expr(std::move(node)));
        }
        return node;
    }

    Result<ExprPtr> parse_primary() {
        const Token& tok = current();
        int line = tok.line;
        switch (tok.type) {
            case TokenType::kName: {
                auto node = make_expr(ExprKind::kLiteral, line);
                const std::string& v = tok.value;
                if (v == "true" || v == "True") {
                    node->literal = Value::boolean(true);
                } else if (v == "false" || v == "False") {
                    node->literal = Value::boolean(false);
                } else if (v == "none" || v == "None") {
                    node->literal = Value::none();
                } else {
                    node->kind = ExprKind::kName;
                    node->name = v;
                }
                advance();
                return node;
            }
            case TokenType::kString: {
                std::string s;
                while (current().type == TokenType::kString) {
                    s += current().value;
                    advance();
                }
                auto node = make_expr(ExprKind::kLiteral, line);
                node->literal = Value::string(std::move(s));
                return node;
            }
            case TokenType::kInteger: {
                auto node = make_expr(ExprKind::kLiteral, line);
                int64_t value = 0;
                auto res = std::from_chars(tok.value.data(), tok.value.data() + tok.value.size(), value);
                if (res.ec != std::errc()) return fail("integer literal too large");
                node->literal = Value::integer(value);
                advance();
                return node;
            }
            case TokenType::kFloat: {
                auto node = make_expr(ExprKind::kLiteral, line);
                node->literal = Value::floating(std::strtod(tok.value.c_str(), nullptr));
                advance();
                return node;
            }
            case TokenType::kOperator:
                if (tok.value == "(") {
                    advance();
                    if (skip_op(")")) return make_expr(ExprKind::kTuple, line);
                    TACO_ASSIGN_OR_RETURN(ExprPtr inner, parse_expression(true));
                    if (is_op(",")) {
                        auto tuple = make_expr(ExprKind::kTuple, line);
                        tuple->children.push_back(std::move(inner));
                        while (skip_op(",")) {
                            if (is_op(")")) break;
                            TACO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
                            tuple->children.push_back(std::move(item));
                        }
                        TACO_RETURN_IF_ERROR(fix_depth(*tuple));
                        inner = std::move(tuple);
                    }
                    TACO_RETURN_IF_ERROR(expect_op(")"));
                    return inner;
                }
                if (tok.value == "[") {
                    advance();
                    auto list = make_expr(ExprKind::kList, line);
                    while (!is_op("]")) {
                        if (!list->children.empty()) TACO_RETURN_IF_ERROR(expect_op(","));
                        if (is_op("]")) break;
                        TACO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
                        list->children.push_back(std::move(item));
                    }
                    advance();
                    TACO_RETURN_IF_ERROR(fix_depth(*list));
                    return list;
                }
                if (tok.value == "{") {
                    advance();
                    auto dict = make_expr(ExprKind::kDict, line);
                    while (!is_op("}")) {
                        if (!dict->children.empty()) TACO_RETURN_IF_ERROR(expect_op(","));
                        if (is_op("}")) break;
                        TACO_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
                        TACO_RETURN_IF_ERROR(expect_op(":"));
                        TACO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
                        dict->children.push_back(std::move(key));
                        dict->children.push_back(std::move(value));
                    }
                    advance();
                    TACO_RETURN_IF_ERROR(fix_depth(*dict));
                    return dict;
                }
                break;
            default: break;
        }
        return fail(fmt::format("unexpected {}", describe()));
    }

    Result<ExprPtr> parse_postfix(ExprPtr node) {
        while (true) {
            int line = current().line;
            if (skip_op(".")) {
                if (current().type == TokenType::kName) {
                    auto attr = make_expr(ExprKind::kGetattr, line);
                    attr->name = current().value;
                    attr->children.push_back(std::move(node));
                    TACO_RETURN_IF_ERROR(fix_depth(*attr));
                    node = std::move(attr);
                    advance();
                } else if (current().type == TokenType::kInteger) {
                    auto item = make_expr(ExprKind::kGetitem, line);
                    auto key = make_expr(ExprKind::kLiteral, line);
                    key->literal = Value::integer(std::strtoll(current().value.c_str(), nullptr, 10));
                    item->children.push_back(std::move(node));
                    item->children.push_back(std::move(key));
                    TACO_RETURN_IF_ERROR(fix_depth(*item));
                    node = std::move(item);
                    advance();
                } else {
                    return fail("expected name or number after '.'");
                }
            } else if (skip_op("[")) {
                TACO_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node), line));
            } else if (is_op("(")) {
                TACO_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
            } else {
                return node;
            }
        }
    }

    Result<ExprPtr> parse_subscript(ExprPtr object, int line) {
        ExprPtr parts[3];
        int index = 0;
        bool is_slice = false;
        while (!is_op("]")) {
            if (skip_op(":")) {
                is_slice = true;
                if (++index > 2) return fail("invalid slice");
                continue;
            }
            if (parts[index]) return fail(fmt::format("expected token ']', got {}", describe()));
            TACO_ASSIGN_OR_RETURN(parts[index], parse_expression(true));
            if (!is_slice && is_op(",")) {
                auto tuple = make_expr(ExprKind::kTuple, line);
                tuple->children.push_back(std::move(parts[0]));
                while (skip_op(",")) {
                    if (is_op("]")) break;
                    TACO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
                    tuple->children.push_back(std::move(item));
                }
                parts[0] = std::move(tuple);
            }
        }
        advance();
        if (!is_slice) {
            if (!parts[0]) return fail("expected subscript expression");
            auto node = make_expr(ExprKind::kGetitem, line);
            node->children.push_back(std::move(object));
            node->children.push_back(std::move(parts[0]));
            TACO_RETURN_IF_ERROR(fix_depth(*node));
            return node;
        }
        auto node = make_expr(ExprKind::kSlice, line);
        node->children.push_back(std::move(object));
        for (auto& p : parts) node->children.push_back(std::move(p));
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    Status parse_call_args(Expr& node) {
        TACO_RETURN_IF_ERROR(expect_op("("));
        bool first = true;
        while (!is_op(")")) {
            if (!first) TACO_RETURN_IF_ERROR(expect_op(","));
            first = false;
            if (is_op(")")) break;
            if (is_op("*") || is_op("**")) return fail("*args and **kwargs in calls are not supported");
            if (current().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == "=") {
                std::string key = current().value;
                advance();
                advance();
                TACO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
                node.keyword.emplace_back(key, std::move(value));
            } else {
                if (!node.keyword.empty()) return fail("positional argument follows keyword argument");
                TACO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
                node.children.push_back(std::move(value));
            }
        }
        advance();
        return Status::ok();
    }

    Result<ExprPtr> parse_call(ExprPtr callee) {
        auto node = make_expr(ExprKind::kCall, current().line);
        node->children.push_back(std::move(callee));
        TACO_RETURN_IF_ERROR(parse_call_args(*node));
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    // `| name(args) | name2 ...` starting at "|"; value may be null (filter blocks).
    Result<ExprPtr> parse_filter_chain(ExprPtr value) {
        bool first = value == nullptr;
        while (first || skip_op("|")) {
            first = false;
            TACO_ASSIGN_OR_RETURN(value, parse_one_filter(std::move(value)));
        }
        return value;
    }

    Result<ExprPtr> parse_one_filter(ExprPtr value) {
        auto node = make_expr(ExprKind::kFilter, current().line);
        TACO_ASSIGN_OR_RETURN(node->name, expect_name());
        while (is_op(".") && peek().type == TokenType::kName) {
            advance();
            node->name += "." + current().value;
            advance();
        }
        if (!is_known_filter(node->name)) note_unknown(fmt::format("no filter named '{}'", node->name));
        node->children.push_back(std::move(value));
        if (is_op("(")) TACO_RETURN_IF_ERROR(parse_call_args(*node));
        TACO_RETURN_IF_ERROR(fix_depth(*node));
        return node;
    }

    Result<ExprPtr> parse_filter_expr(ExprPtr node) {
        while (true) {
            if (skip_op("|")) {
                TACO_ASSIGN_OR_RETURN(node, parse_one_filter(std::move(node)));
            } else if (is_name("is")) {
                advance();
                auto test = make_expr(ExprKind::kTest, current().line);
                test->negated = skip_name("not");
                TACO_ASSIGN_OR_RETURN(test->name, expect_name());
                while (is_op(".") && peek().type == TokenType::kName) {
                    advance();
                    test->name += "." + current().value;
                    advance();
                }
                if (!is_known_test(test->name)) note_unknown(fmt::format("no test named '{}'", test->name));
                test->children.push_back(std::move(node));
                if (is_op("(")) {
                    TACO_RETURN_IF_ERROR(parse_call_args(*test));
                } else if ((current().type == TokenType::kName || current().type == TokenType::kString ||
                            current().type == TokenType::kInteger || current().type == TokenType::kFloat ||
                            is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) return fail("You cannot chain multiple tests with is");
                    TACO_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
                    TACO_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
                    test->children.push_back(std::move(arg));
                }
                TACO_RETURN_IF_ERROR(fix_depth(*test));
                node = std::move(test);
            } else if (is_op("(")) {
                TACO_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
            } else {
                return node;
            }
        }
    }

    const std::vector<Token>& tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    int conditional_depth_ = 0;
    std::vector<std::string> unknown_;
};

}  // namespace

Result<Body> parse_template(const std::vector<Token>& tokens) { return Parser(tokens).parse(); }

}  // namespace taco::jinja
