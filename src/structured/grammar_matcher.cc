#include "structured/grammar_matcher.h"

#include <algorithm>
#include <bit>

#include "core/check.h"

namespace taco::structured {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::vector<int32_t> end_token_ids)
    : grammar_(std::move(grammar)), end_token_ids_(std::move(end_token_ids)), pool_(grammar_->grammar()) {
    history_.push_back({pool_.start(grammar_->grammar().root_state(), kRootParent), false});
}

bool GrammarMatcher::is_end_token(int32_t token) const {
    return std::find(end_token_ids_.begin(), end_token_ids_.end(), token) != end_token_ids_.end();
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (current().ended) return false;
    Step next{current().set, false};
    StackSet scratch;
    for (char c : bytes) {
        if (next.set.empty()) return false;
        pool_.advance(next.set, uint8_t(c), scratch);
        std::swap(next.set, scratch);
    }
    if (next.set.empty() && !next.set.can_finish) return false;
    history_.push_back(std::move(next));
    return true;
}

bool GrammarMatcher::accept_token(int32_t token) {
    if (current().ended) return false;
    if (is_end_token(token)) {
        if (!current().set.can_finish) return false;
        history_.push_back({current().set, true});
        return true;
    }
    if (!grammar_->vocab().matchable(token)) return false;
    return accept_bytes(grammar_->vocab().bytes(token));
}

void GrammarMatcher::rollback(int64_t num_tokens) {
    TACO_CHECK_MSG(num_tokens >= 0 && num_tokens <= num_accepted(), "rollback of {} tokens, {} accepted", num_tokens,
                   num_accepted());
    history_.resize(history_.size() - size_t(num_tokens));
}

int64_t GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
    const TokenVocab& vocab = grammar_->vocab();
    TACO_CHECK_EQ(int64_t(words.size()), vocab.num_mask_words());
    std::fill(words.begin(), words.end(), 0u);
    if (current().ended) return 0;
    const StackSet& set = current().set;
    auto allow = [&](int32_t id) { words[size_t(id) / 32] |= uint32_t(1) << (id % 32); };
    auto allowed = [&](int32_t id) { return (words[size_t(id) / 32] >> (id % 32)) & 1; };
    if (!set.empty()) {
        if (grammar_->precomputed()) {
            // The context-independent part: each distinct top state's accepted set; then the uncertain tokens of
            // those states, checked against the real stacks.
            std::vector<int32_t> states;
            for (int32_t f : set.tops) states.push_back(pool_.frame(f).state);
            std::sort(states.begin(), states.end());
            states.erase(std::unique(states.begin(), states.end()), states.end());
            uncertain_.clear();
            for (int32_t s : states) {
                const CompiledGrammar::StateMasks& m = grammar_->state_masks(s);
                if (!m.accepted.empty())
                    for (size_t w = 0; w < words.size(); ++w) words[w] |= m.accepted[w];
                for (int32_t id : m.accepted_ids) allow(id);
                uncertain_.insert(uncertain_.end(), m.uncertain.begin(), m.uncertain.end());
            }
            if (states.size() > 1) {
                std::sort(uncertain_.begin(), uncertain_.end());
                uncertain_.erase(std::unique(uncertain_.begin(), uncertain_.end()), uncertain_.end());
            }
            std::erase_if(uncertain_, [&](uint32_t index) { return allowed(vocab.sorted()[index]); });
            walk_tokens(pool_, vocab, set, uncertain_, [&](size_t index, bool alive, bool) {
                if (alive) allow(vocab.sorted()[index]);
            });
        } else {
            walk_all_tokens(pool_, grammar_->grammar(), vocab, set, [&](size_t index, bool alive, bool) {
                if (alive) allow(vocab.sorted()[index]);
            });
        }
    }
    if (set.can_finish)
        for (int32_t id : end_token_ids_)
            if (id >= 0 && id < vocab.vocab_size()) allow(id);
    int64_t count = 0;
    for (uint32_t w : words) count += std::popcount(w);
    return count;
}

}  // namespace taco::structured
