#include "structured/compiled_grammar.h"

namespace taco::structured {
namespace {

// The walk's work area: levels[d] is the set after the first d bytes of the current token.
struct WalkLevels {
    std::vector<StackSet> sets;
    std::vector<bool> escaped;
};

// One token at sorted index `index` whose first `common` bytes equal the previous token's.
void walk_one(FramePool& pool, const TokenVocab& vocab, size_t index, int32_t common, WalkLevels& levels,
              int32_t& valid, const TokenVisitor& visit) {
    const std::string_view bytes = vocab.sorted_bytes(index);
    if (levels.sets.size() < bytes.size() + 1) {
        levels.sets.resize(bytes.size() + 1);
        levels.escaped.resize(bytes.size() + 1);
    }
    int32_t d = std::min(common, valid);
    bool dead = false;
    while (size_t(d) < bytes.size()) {
        if (levels.sets[size_t(d)].empty()) {
            dead = true;
            break;
        }
        pool.advance(levels.sets[size_t(d)], uint8_t(bytes[size_t(d)]), levels.sets[size_t(d) + 1]);
        levels.escaped[size_t(d) + 1] = levels.escaped[size_t(d)] || levels.sets[size_t(d) + 1].escaped;
        ++d;
    }
    valid = d;
    const StackSet& end = levels.sets[size_t(d)];
    visit(index, !dead && (!end.empty() || end.can_finish), levels.escaped[size_t(d)]);
}

int32_t common_prefix(std::string_view a, std::string_view b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return int32_t(n);
}

}  // namespace

void walk_tokens(FramePool& pool, const TokenVocab& vocab, const StackSet& start, std::span<const uint32_t> indices,
                 const TokenVisitor& visit) {
    const size_t mark = pool.mark();
    WalkLevels levels;
    levels.sets.resize(1);
    levels.escaped.assign(1, false);
    levels.sets[0] = start;
    int32_t valid = 0;
    for (size_t i = 0; i < indices.size(); ++i) {
        const size_t index = indices[i];
        int32_t common = 0;
        if (i > 0)
            common = indices[i - 1] + 1 == index
                         ? vocab.lcp(index)
                         : common_prefix(vocab.sorted_bytes(indices[i - 1]), vocab.sorted_bytes(index));
        walk_one(pool, vocab, index, common, levels, valid, visit);
    }
    pool.release(mark);
}

void walk_all_tokens(FramePool& pool, const Grammar& grammar, const TokenVocab& vocab, const StackSet& start,
                     const TokenVisitor& visit) {
    ByteSet first;
    for (int32_t f : start.tops)
        for (const ByteEdge& e : grammar.states[size_t(pool.frame(f).state)].byte_edges) first |= e.bytes;
    const size_t mark = pool.mark();
    WalkLevels levels;
    levels.sets.resize(1);
    levels.escaped.assign(1, false);
    levels.sets[0] = start;
    for (int b = 0; b < 256; ++b) {
        if (!first.contains(uint8_t(b))) continue;
        int32_t valid = 0;  // a new first byte shares nothing with the bucket before
        for (size_t index = vocab.first_byte_begin(b); index < vocab.first_byte_begin(b + 1); ++index) {
            const int32_t common = index == vocab.first_byte_begin(b) ? 0 : vocab.lcp(index);
            walk_one(pool, vocab, index, common, levels, valid, visit);
        }
    }
    pool.release(mark);
}

namespace {

CompiledGrammar::StateMasks classify_tokens(const Grammar& grammar, const TokenVocab& vocab, int32_t state) {
    CompiledGrammar::StateMasks m;
    FramePool pool(grammar);
    // The state alone, not closed: a stack top at `state` consumes its next byte on the state's own edges (its calls
    // and returns are separate tops of the runtime set, with masks of their own).
    StackSet start;
    start.tops.push_back(pool.intern(state, kOpenParent));
    const size_t words = size_t(vocab.num_mask_words());
    walk_all_tokens(pool, grammar, vocab, start, [&](size_t index, bool alive, bool escaped) {
        if (alive)
            m.accepted_ids.push_back(vocab.sorted()[index]);
        else if (escaped)
            m.uncertain.push_back(uint32_t(index));
    });
    if (m.accepted_ids.size() > words) {
        m.accepted.assign(words, 0);
        for (int32_t id : m.accepted_ids) m.accepted[size_t(id) / 32] |= uint32_t(1) << (id % 32);
        m.accepted_ids = {};
    }
    m.uncertain.shrink_to_fit();
    return m;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocab> vocab, bool precompute)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), precompute_(precompute) {
    if (!precompute_) return;
    masks_.resize(grammar_.states.size());
    FramePool pool(grammar_);
    for (int32_t f : pool.start(grammar_.root_state(), kRootParent).tops) state_masks(pool.frame(f).state);
}

const CompiledGrammar::StateMasks& CompiledGrammar::state_masks(int32_t state) const {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (masks_[size_t(state)]) return *masks_[size_t(state)];
    }
    auto masks = std::make_unique<const StateMasks>(classify_tokens(grammar_, *vocab_, state));
    std::lock_guard<std::mutex> lock(mutex_);
    if (!masks_[size_t(state)]) masks_[size_t(state)] = std::move(masks);  // else another thread was first
    return *masks_[size_t(state)];
}

int64_t CompiledGrammar::num_classified_states() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t n = 0;
    for (const auto& m : masks_) n += m != nullptr;
    return n;
}

size_t CompiledGrammar::mask_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (const auto& m : masks_)
        if (m) total += (m->accepted_ids.size() + m->accepted.size() + m->uncertain.size()) * sizeof(uint32_t);
    return total;
}

}  // namespace taco::structured
