// Streaming text for generated token ids (vLLM's prefix/read-offset scheme). Each piece is valid UTF-8: text that
// ends in an incomplete character (U+FFFD from a partial byte sequence) is held back until a later id completes it
// or flush() is called. Invariant: the concatenation of every push() result and flush() equals
// tokenizer.decode(all pushed ids, skip_special_tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace taco {

class IncrementalDetokenizer {
public:
    // `prompt_ids`: the request's prompt, as vLLM passes it. The stream is defined by the generated ids alone (see
    // the invariant above), so the prompt only sizes nothing today; it is kept so call sites match vLLM's and a
    // prompt-relative mode can be added without changing them. `tokenizer` must outlive this object.
    IncrementalDetokenizer(const Tokenizer& tokenizer, std::vector<int32_t> prompt_ids, bool skip_special_tokens);

    // Text that `id` adds (possibly empty).
    std::string push(int32_t id);
    // Whatever is still held back.
    std::string flush();

    size_t num_generated() const { return ids_.size(); }

private:
    std::string decode_range(size_t begin, size_t end) const;
    bool visible(int32_t id) const;  // survives decode's filtering (known id, not a skipped special token)

    const Tokenizer& tokenizer_;
    std::vector<int32_t> prompt_ids_;
    bool skip_special_tokens_;
    std::vector<int32_t> ids_;  // generated so far
    size_t prefix_offset_ = 0;  // start of the context window re-decoded with each new id
    size_t read_offset_ = 0;    // ids before this have been emitted
    size_t emitted_bytes_ = 0;
};

}  // namespace taco
