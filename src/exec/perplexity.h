// Perplexity of a token sequence with the sliding-window method of transformers' perplexity guide
// ("Perplexity of fixed-length models"): windows of `window` tokens start at 0, stride, 2 * stride, ... until
// one reaches the end of the text. Each window is a fresh context (positions restart at 0). The first window
// scores every token but its first; a later window scores only its last (end - previous window's end) tokens,
// so every token after the first is scored exactly once, with up to window - stride tokens of left context.
// A window's first token is never scored (nothing predicts it), which only matters when stride == window.
//
// perplexity = exp(sum of scored -log p / number of scored tokens). The guide's own code weights each later
// window's mean loss by (scored tokens - 1) instead of its scored tokens, a bias that shrinks with the stride:
// 0.15% at window 128 / stride 64 on 1,017 tokens, 0.001% at 1024 / 512 on 245k tokens (both figures are in
// tests/data/demo/perplexity.json). We compute the exact mean.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "model/decoder.h"

namespace taco {

struct PerplexityOptions {
    int64_t window = 0;                  // tokens per window; 0: min(max model length, kDefaultWindow)
    int64_t stride = 0;                  // 0: window / 2 (the guide's 1024 / 512)
    int64_t block_size = 16;             // KV cache block size
    int64_t forward_chunk_tokens = 512;  // a window runs as chunked prefill; bounds logits memory

    static constexpr int64_t kDefaultWindow = 1024;
};

struct PerplexityResult {
    int64_t num_tokens = 0;         // tokens in the text
    int64_t num_scored_tokens = 0;  // tokens whose -log p was summed
    int64_t num_windows = 0;
    int64_t window = 0;  // the window and stride used (defaults resolved)
    int64_t stride = 0;
    double nll_sum = 0;  // sum of -log p (natural log) over scored tokens

    double mean_nll() const { return nll_sum / double(num_scored_tokens); }
    double perplexity() const;
};

// Runs on the decoder's device (ForwardExecutor; logits rows read on the host). Errors: fewer than 2 tokens, a
// token outside the vocabulary, window < 2 or past the model's maximum length, stride outside [1, window].
Result<PerplexityResult> sliding_window_perplexity(Decoder& decoder, std::span<const int32_t> token_ids,
                                                   const PerplexityOptions& options);

}  // namespace taco
