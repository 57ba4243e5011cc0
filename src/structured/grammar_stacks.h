// The parse state of a Grammar: a set of call stacks (the possible parses of the bytes so far), advanced one byte
// at a time. A stack is a linked list of frames (state, parent frame), interned in a FramePool so that stacks
// sharing a bottom share its frames and a set of stacks is a set of frame ids. The top frame of every stack in a
// StackSet is at a state with byte edges: the closure (calls entered, finished rules returned from) is taken as
// soon as a frame is made.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"

namespace taco::structured {

constexpr int32_t kRootParent = -1;  // the bottom of a stack: returning from here finishes the grammar
constexpr int32_t kOpenParent = -2;  // an unknown context below (the precomputed masks start there)

struct Frame {
    int32_t state = 0;
    int32_t parent = kRootParent;  // frame id, kRootParent or kOpenParent
};

struct StackSet {
    std::vector<int32_t> tops;  // frame ids, sorted, unique
    bool can_finish = false;    // some parse has finished the root rule
    bool escaped = false;       // some parse returned into kOpenParent (below the known stack)

    bool empty() const { return tops.empty(); }
};

class FramePool {
public:
    // A set past this many stacks (an ambiguous grammar whose parses multiply with every byte) is treated as a dead
    // end: the matcher refuses the byte rather than slow every later step down without bound.
    static constexpr size_t kMaxStacks = 4096;

    explicit FramePool(const Grammar& grammar) : grammar_(grammar) {}

    const Frame& frame(int32_t id) const { return frames_[size_t(id)]; }
    int32_t intern(int32_t state, int32_t parent);

    // The set of one frame, closed; the start of a match is start(root_state(), kRootParent).
    StackSet start(int32_t state, int32_t parent);
    // The set after one more byte; `to` may not alias `from`.
    void advance(const StackSet& from, uint8_t byte, StackSet& to);

    // Frames made after mark() are dropped by release(mark) (the mask search probes many bytes and keeps none).
    size_t mark() const { return frames_.size(); }
    void release(size_t mark);

private:
    // Adds frame `id` and its closure to `out`.
    void close(int32_t id, StackSet& out);
    static uint64_t key(int32_t state, int32_t parent) { return (uint64_t(uint32_t(state)) << 32) | uint32_t(parent); }

    const Grammar& grammar_;
    std::vector<Frame> frames_;
    std::unordered_map<uint64_t, int32_t> index_;
    std::vector<uint32_t> visited_;  // [frames] the closure epoch that last visited each frame
    uint32_t epoch_ = 0;
    std::vector<int32_t> work_;
};

}  // namespace taco::structured
