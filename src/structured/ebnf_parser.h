// EBNF grammar text -> Grammar: vLLM's guided_grammar in the two notations its backends read.
//   GBNF (llama.cpp / XGrammar):  root ::= "a" item* ; item ::= [a-z0-9] | "(" root ")"   (rules need no ';')
//   Lark (vLLM's examples):       start: "a" item* ; item: /[a-z0-9]/ | "(" start ")" | [ optional ]
// Both: string literals "..." / '...' (escapes \n \t \r \\ \" \' \xHH \uHHHH), rule references, ( ), |,
// the quantifiers * + ? {m} {m,} {m,n}, /regex/ literals (regex_compiler.h), comments (# or //). GBNF reads
// [...] as a character class, Lark as an optional group; a grammar is Lark when no rule uses '::='. The root is
// 'root' (GBNF) or 'start' (Lark). Lark's "%import common.NAME" brings in the common terminals (WS, NUMBER, INT,
// SIGNED_NUMBER, DIGIT, LETTER, WORD, CNAME, ESCAPED_STRING, NEWLINE, ...). Left recursion, "%ignore", aliases
// ("-> name"), string flags and terminal priorities are errors naming the problem.
#pragma once

#include <string_view>

#include "core/status.h"
#include "structured/grammar.h"

namespace taco::structured {

Result<Grammar> parse_ebnf(std::string_view text);

}  // namespace taco::structured
