// Regex -> grammar fragment: the subset that JSON Schema "pattern"s and vLLM's guided_regex use (ECMAScript
// syntax): literals, '.', classes with ranges and negation, \d \w \s (and negations), \n \t \r \f \v \0 \xHH
// \uHHHH \u{H..} escapes, groups (capturing, (?:...), (?<name>...)), alternation, the quantifiers * + ? {m}
// {m,} {m,n} (lazy forms match the same strings), and '^' / '$' at the ends of the pattern. Matching is on
// Unicode code points, compiled to valid UTF-8 byte sequences. Anything else (backreferences, lookaround, \b,
// \p{..}, flags) is an error naming it, never approximated.
#pragma once

#include <string_view>

#include "core/status.h"
#include "structured/grammar.h"

namespace taco::structured {

struct RegexOptions {
    // JSON Schema semantics: the pattern may match anywhere in the string unless anchored by '^' / '$', so an
    // unanchored end also admits any text there. Otherwise (guided_regex) the whole text must match.
    bool search = false;
    // The text is the inside of a JSON string: characters JSON must escape (", \, U+0000..U+001F) are produced as
    // their escapes (\" \\ \n \u001f ...), everything else as itself.
    bool json_string = false;
};

Result<Fragment> compile_regex(std::string_view pattern, GrammarBuilder& builder, const RegexOptions& options = {});

}  // namespace taco::structured
