// Parser: tokens -> statement tree, following jinja2's grammar and operator precedence
// (or < and < not < comparisons < + - < ~ < * / // % < ** < unary - + < postfix . [] () < filters and tests).
// Unknown filters/tests outside conditional code are load-time errors, as in jinja2.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace taco::jinja {

Result<Body> parse_template(const std::vector<Token>& tokens);

}  // namespace taco::jinja
