// GrammarMatcher: one request's position in a CompiledGrammar. Accepts tokens (or raw bytes), yields the
// [vocab/32] uint32 bitmask of the tokens that may come next (bit id % 32 of word id / 32), and rolls back
// accepted tokens (speculative decoding, a rejected draft). Not thread-safe; one per sequence.
//
// End tokens (EOS, stop token ids) are allowed exactly when the grammar can finish; accepting one ends the match.
// The match is terminated when an end token was accepted, or when the grammar has finished and no byte can
// follow: the request is then complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/grammar_stacks.h"

namespace taco::structured {

class GrammarMatcher {
public:
    GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::vector<int32_t> end_token_ids);

    // False (state unchanged) when the token may not come next.
    bool accept_token(int32_t token);
    // The bytes as one step (rolled back as one token). False (state unchanged) when they do not match.
    bool accept_bytes(std::string_view bytes);
    // Undoes the last num_tokens accepts (at most num_accepted()).
    void rollback(int64_t num_tokens);

    // words: [vocab/32] (CompiledGrammar::vocab().num_mask_words()), overwritten. Returns the number of allowed
    // tokens (0 only after termination).
    int64_t fill_next_token_bitmask(std::span<uint32_t> words);

    bool can_finish() const { return !current().ended && current().set.can_finish; }
    bool is_terminated() const { return current().ended || (current().set.empty() && current().set.can_finish); }
    int64_t num_accepted() const { return int64_t(history_.size()) - 1; }
    const CompiledGrammar& grammar() const { return *grammar_; }

private:
    struct Step {
        StackSet set;
        bool ended = false;  // an end token was accepted
    };
    const Step& current() const { return history_.back(); }
    bool is_end_token(int32_t token) const;

    std::shared_ptr<const CompiledGrammar> grammar_;
    std::vector<int32_t> end_token_ids_;
    FramePool pool_;
    std::vector<Step> history_;        // [accepted + 1] the state before each accept, then the current one
    std::vector<uint32_t> uncertain_;  // scratch of fill_next_token_bitmask
};

}  // namespace taco::structured
