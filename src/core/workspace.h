// Workspace: the arena every activation buffer of a forward pass comes from (ARCHITECTURE.md, "One decoder, two
// backends"). A runner owns one; each forward pass starts with reset() and carves its buffers in call order, so
// the same step shape always gets the same addresses (what a CUDA graph replays) and a warmed-up step allocates
// nothing.
//
// Sizing: until reserve() is called the workspace is unsized: alloc() hands out views with no memory
// (data == nullptr) and only records the high-water mark. A runner runs one dry forward pass at its largest
// step shape (ops check shapes and return, ExecContext::dry_run), then reserves the mark. A sized workspace
// aborts, naming the sizes, when a pass asks for more than the dry run did: a step larger than the runner was
// sized for is a bug of the caller.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "core/tensor.h"

namespace taco {

class Workspace {
public:
    explicit Workspace(MemoryKind memory = MemoryKind::kHost) : memory_(memory) {}

    // Starts a pass: the next alloc() is at offset 0.
    void reset() { offset_ = 0; }
    // A [dims] view of dtype, 256-byte aligned.
    TensorView alloc(std::initializer_list<int64_t> dims, DType dtype);
    // Stack discipline inside a pass: buffers of one block can be handed back for the next one.
    size_t mark() const { return offset_; }
    void release_to(size_t mark);

    // Allocates the buffer (once): at least `bytes`.
    void reserve(size_t bytes);
    bool sized() const { return buffer_.defined(); }
    size_t high_water_bytes() const { return high_water_; }
    size_t capacity_bytes() const { return capacity_; }
    Device device() const { return device_of(memory_); }

private:
    MemoryKind memory_;
    Tensor buffer_;
    size_t capacity_ = 0;
    size_t offset_ = 0;
    size_t high_water_ = 0;
};

}  // namespace taco
