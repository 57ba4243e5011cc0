// Grammar: a byte-level context-free grammar in which every rule is a finite automaton over bytes whose edges may
// also call another rule (a recursive transition network). Regexes, JSON schemas, choices and EBNF grammars all
// compile to it (regex_compiler.h, json_schema_grammar.h, ebnf_parser.h); GrammarMatcher runs it.
//
// Invariants of a finished Grammar (GrammarBuilder::finish): no epsilon edges; every state belongs to one rule;
// a rule is entered only at its start state through a call edge and left from an accepting state of its own;
// no rule is left-recursive (so a matcher's closure is finite); the root rule can match something.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "structured/byte_set.h"

namespace taco::structured {

struct ByteEdge {
    ByteSet bytes;
    int32_t target = 0;
};

struct CallEdge {
    int32_t rule = 0;    // the rule entered
    int32_t target = 0;  // where this rule continues once the called rule has matched
};

struct GrammarState {
    std::vector<ByteEdge> byte_edges;
    std::vector<CallEdge> call_edges;
    std::vector<int32_t> epsilon_edges;  // only while building
    bool accepting = false;              // the rule may end here
};

struct GrammarRule {
    std::string name;
    int32_t start = -1;  // -1: declared, body not set yet
};

struct Grammar {
    std::vector<GrammarState> states;
    std::vector<GrammarRule> rules;
    int32_t root_rule = 0;

    int32_t root_state() const { return rules[size_t(root_rule)].start; }
};

// A piece of automaton under construction (Thompson's construction): enter at `start`, leave at `end`, which has
// no edges yet. A fragment is used once; repeat() clones it for each copy.
struct Fragment {
    int32_t start = 0;
    int32_t end = 0;
};

class GrammarBuilder {
public:
    // The largest automaton a grammar may grow to before building fails (a repeat count of millions, say). Past it
    // the builder stops growing (new states are one dead state, edges are dropped), so a huge input costs at most
    // this many states before finish() reports it.
    static constexpr int64_t kMaxStates = 250'000;

    // Declares a rule (its body comes later, so rules may call each other in any order); names must be unique.
    int32_t add_rule(std::string name);
    std::optional<int32_t> find_rule(std::string_view name) const;
    void set_body(int32_t rule, Fragment body);
    const std::string& rule_name(int32_t rule) const { return grammar_.rules[size_t(rule)].name; }

    Fragment empty();
    Fragment bytes(const ByteSet& set);  // one byte of the set
    Fragment literal(std::string_view text);
    // `text` in which every tag (<tool_call>, </tool_call>, <|python_tag|>, [TOOL_CALLS]: '<' or '[' up to the next
    // '>' or ']', without spaces) may also be the special token of that text (its kSpecialTokenMark form,
    // token_vocab.h).
    Fragment tag_literal(std::string_view text);
    Fragment call(int32_t rule);
    Fragment seq(Fragment a, Fragment b);
    Fragment alt(const std::vector<Fragment>& choices);  // empty list: matches nothing
    Fragment star(Fragment f);
    Fragment plus(Fragment f);
    Fragment optional(Fragment f);
    // f repeated min..max times (max absent: unbounded). Errors when max < min or the automaton grows too large.
    Result<Fragment> repeat(Fragment f, int64_t min, std::optional<int64_t> max);
    // f (bytes and epsilons only, no calls) restricted to the texts of min..max characters (max absent: no upper
    // bound), where f spells the inside of a JSON string: a character is one UTF-8 sequence or one escape (\n,
    // \u00e9). The product of f with a character counter, without the states that cannot reach the end; a pattern or
    // format with minLength / maxLength. Errors when the product grows too large.
    Result<Fragment> json_chars_bounded(Fragment f, int64_t min, std::optional<int64_t> max);
    // Any text in which the ASCII `tag` never occurs (it may end with a part of it): a KMP automaton over ASCII
    // bytes, each state also taking one non-ASCII character of `non_ascii()` (a fresh fragment per call, e.g. the
    // UTF-8 of [^\x00-\x7F]). A tool-call format's free text before its calls. Not for use inside repeat().
    Fragment text_without(std::string_view tag, const std::function<Fragment()>& non_ascii);

    // Checks and returns the grammar rooted at `root`: every called rule has a body, none is left-recursive, the
    // root matches something. Epsilon edges are removed and unreachable states dropped.
    Result<Grammar> finish(int32_t root);

private:
    int32_t new_state();
    void epsilon(int32_t from, int32_t to) {
        if (!too_large_) grammar_.states[size_t(from)].epsilon_edges.push_back(to);
    }
    Fragment clone(Fragment f);

    Grammar grammar_;
    std::unordered_map<std::string, int32_t> rule_ids_;  // name -> rule
    bool too_large_ = false;
};

}  // namespace taco::structured
