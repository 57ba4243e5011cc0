// CompiledGrammar: a Grammar bound to a TokenVocab, with the context-independent part of every token mask
// computed once (the method of XGrammar's adaptive token mask cache). For each grammar state a stack top can sit
// at, every token is classified by matching its bytes from that state alone, with an unknown stack below:
//   accepted  - its bytes are consumed without returning below the state's frame: allowed in every context;
//   rejected  - it fails before ever returning below: allowed in no context;
//   uncertain - it returns below (the rule ends inside the token): only the matcher's real stack can tell.
// At run time (GrammarMatcher) a mask is the union of the accepted sets of the current stack tops, plus those of
// their uncertain tokens that the full stacks accept. The states of the start are classified when the grammar is
// built; any other state the first time a matcher stands on it (so a grammar with thousands of states, most never
// visited, compiles in the time of its start), then kept for every matcher of the grammar. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "structured/grammar.h"
#include "structured/grammar_stacks.h"
#include "structured/token_vocab.h"

namespace taco::structured {

class CompiledGrammar {
public:
    // precompute = false leaves every token uncertain (each mask is then searched in full: for tests, to compare).
    CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocab> vocab, bool precompute = true);
    CompiledGrammar(const CompiledGrammar&) = delete;
    CompiledGrammar& operator=(const CompiledGrammar&) = delete;

    const Grammar& grammar() const { return grammar_; }
    const TokenVocab& vocab() const { return *vocab_; }
    const std::shared_ptr<const TokenVocab>& vocab_ptr() const { return vocab_; }
    bool precomputed() const { return precompute_; }

    struct StateMasks {
        // The accepted tokens as ids when that is smaller than a bitmask (most states admit a few tokens), else as a
        // [vocab/32] bitmask (the states inside strings admit most); both empty: none.
        std::vector<int32_t> accepted_ids;
        std::vector<uint32_t> accepted;
        std::vector<uint32_t> uncertain;  // TokenVocab::sorted() indices, ascending
    };
    // The masks of a state with byte edges (precomputed() only), classified now if no matcher stood there before.
    const StateMasks& state_masks(int32_t state) const;

    // States classified so far and the bytes of their masks (for logs, benchmarks and tests).
    int64_t num_classified_states() const;
    size_t mask_bytes() const;

private:
    Grammar grammar_;
    std::shared_ptr<const TokenVocab> vocab_;
    bool precompute_;
    mutable std::mutex mutex_;                                      // guards masks_
    mutable std::vector<std::unique_ptr<const StateMasks>> masks_;  // [states] null: not classified yet
};

// Matches tokens of the vocabulary from `start`, one after the other in sorted order, sharing the work of common
// prefixes: for each sorted index in `indices` (ascending) calls visit(index, alive, escaped) where alive says the
// token's bytes all advance (some stack is left, or the grammar can finish) and escaped says some parse returned
// below kOpenParent on the way. first_bytes, when given, limits the walk to tokens starting with one of them.
// Frames made on the way are released before returning.
using TokenVisitor = std::function<void(size_t index, bool alive, bool escaped)>;
void walk_tokens(FramePool& pool, const TokenVocab& vocab, const StackSet& start, std::span<const uint32_t> indices,
                 const TokenVisitor& visit);
// The same over every token whose first byte some top of `start` has an edge for.
void walk_all_tokens(FramePool& pool, const Grammar& grammar, const TokenVocab& vocab, const StackSet& start,
                     const TokenVisitor& visit);

}  // namespace taco::structured
