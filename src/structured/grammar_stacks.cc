#include "structured/grammar_stacks.h"

#include <algorithm>

namespace taco::structured {

int32_t FramePool::intern(int32_t state, int32_t parent) {
    auto [it, inserted] = index_.try_emplace(key(state, parent), int32_t(frames_.size()));
    if (inserted) {
        frames_.push_back({state, parent});
        visited_.push_back(0);
    }
    return it->second;
}

void FramePool::release(size_t mark) {
    while (frames_.size() > mark) {
        index_.erase(key(frames_.back().state, frames_.back().parent));
        frames_.pop_back();
        visited_.pop_back();
    }
}

void FramePool::close(int32_t id, StackSet& out) {
    work_.clear();
    work_.push_back(id);
    while (!work_.empty()) {
        const int32_t f = work_.back();
        work_.pop_back();
        if (visited_[size_t(f)] == epoch_) continue;
        visited_[size_t(f)] = epoch_;
        const Frame frame = frames_[size_t(f)];
        const GrammarState& s = grammar_.states[size_t(frame.state)];
        if (!s.byte_edges.empty()) out.tops.push_back(f);
        if (s.accepting) {
            if (frame.parent == kRootParent)
                out.can_finish = true;
            else if (frame.parent == kOpenParent)
                out.escaped = true;
            else
                work_.push_back(frame.parent);  // the caller continues at its return state
        }
        for (const CallEdge& e : s.call_edges) {
            const int32_t ret = intern(e.target, frame.parent);
            work_.push_back(intern(grammar_.rules[size_t(e.rule)].start, ret));
        }
    }
}

StackSet FramePool::start(int32_t state, int32_t parent) {
    StackSet out;
    ++epoch_;
    close(intern(state, parent), out);
    std::sort(out.tops.begin(), out.tops.end());
    return out;
}

void FramePool::advance(const StackSet& from, uint8_t byte, StackSet& to) {
    to.tops.clear();
    to.can_finish = false;
    to.escaped = false;
    ++epoch_;
    for (int32_t f : from.tops) {
        const Frame frame = frames_[size_t(f)];
        for (const ByteEdge& e : grammar_.states[size_t(frame.state)].byte_edges)
            if (e.bytes.contains(byte)) close(intern(e.target, frame.parent), to);
        if (to.tops.size() > kMaxStacks) {
            to.tops.clear();
            to.can_finish = false;
            return;
        }
    }
    std::sort(to.tops.begin(), to.tops.end());
}

}  // namespace taco::structured
