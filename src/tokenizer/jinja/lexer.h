// Lexer: template source -> tokens, reproducing jinja2's lexer under transformers' settings (trim_blocks,
// lstrip_blocks, keep_trailing_newline=False): newlines normalised to "\n", one trailing newline dropped,
// "-"/"+" whitespace control on tags, comments and {% raw %} resolved here so the parser sees data and tags only.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace taco::jinja {

enum class TokenType {
    kData,
    kVariableBegin,
    kVariableEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInteger,
    kFloat,
    kOperator,
    kEof
};

struct Token {
    TokenType type;
    std::string value;  // data text, name, unescaped string, number text, operator
    int line = 1;
};

Result<std::vector<Token>> tokenize(const std::string& source);

}  // namespace taco::jinja
