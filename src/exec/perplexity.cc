#include "exec/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/forward_executor.h"
#include "model/kv_cache_tensors.h"

namespace taco {
namespace {

// -log softmax(logits)[target] in double: max-shifted log-sum-exp so large logits neither overflow nor lose
// the target's share.
double token_nll(const float* logits, int64_t vocab, int32_t target) {
    double max_logit = logits[0];
    for (int64_t i = 1; i < vocab; ++i) max_logit = std::max(max_logit, double(logits[i]));
    double sum = 0;
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max_logit);
    return max_logit + std::log(sum) - double(logits[target]);
}

// Runs tokens [begin, end) as one fresh sequence and adds -log p of the last `num_scored` of them, each
// predicted from the tokens before it in the window. The window runs as chunked prefill, split where the scored
// rows start, so every chunk's logit rows are its first rows (RunnerSequence::num_prompt_logits); chunk
// boundaries change no bit (batch invariance).
double window_nll(ForwardExecutor& executor, KvCacheTensors& kv, std::span<const int32_t> tokens, int64_t num_scored,
                  const PerplexityOptions& options) {
    const int64_t length = int64_t(tokens.size());
    std::vector<int32_t> block_table(static_cast<size_t>(kv.num_blocks));
    for (int64_t b = 0; b < kv.num_blocks; ++b) block_table[size_t(b)] = int32_t(b);

    // Row p's logits predict token p + 1; the scored targets are [length - num_scored, length).
    const int64_t first_row = length - num_scored - 1;
    double nll = 0;
    for (int64_t begin = 0; begin < length;) {
        int64_t end = std::min(length, begin + options.forward_chunk_tokens);
        if (begin < first_row && end > first_row) end = first_row;
        RunnerSequence seq;
        seq.token_ids = tokens;
        seq.num_computed_tokens = begin;
        seq.num_new_tokens = end - begin;
        seq.block_table = block_table;
        seq.max_length = length;
        if (begin >= first_row) seq.num_prompt_logits = end < length ? end - begin : end - begin - 1;
        executor.execute({&seq, 1}, kv);
        const TensorView logits = executor.host_logits();  // [num_prompt_logits, vocab] f32, on the host
        for (int64_t i = 0; i < seq.num_prompt_logits; ++i) {
            const int64_t pos = begin + i;
            nll += token_nll(logits.row<float>(i), logits.shape[1], tokens[size_t(pos + 1)]);
        }
        begin = end;
    }
    return nll;
}

}  // namespace

double PerplexityResult::perplexity() const { return std::exp(mean_nll()); }

Result<PerplexityResult> sliding_window_perplexity(Decoder& decoder, std::span<const int32_t> token_ids,
                                                   const PerplexityOptions& options) {
    const ModelConfig& config = decoder.config();
    const int64_t num_tokens = int64_t(token_ids.size());
    if (num_tokens < 2) return error("perplexity needs at least 2 tokens, the text has {}", num_tokens);
    for (size_t i = 0; i < token_ids.size(); ++i) {
        if (token_ids[i] < 0 || token_ids[i] >= config.vocab_size)
            return error("token {} (at index {}) is outside the vocabulary [0, {})", token_ids[i], i,
                         config.vocab_size);
    }
    const int64_t max_len = config.derived_max_model_len();
    PerplexityOptions resolved = options;
    if (resolved.window == 0) resolved.window = std::min(max_len, PerplexityOptions::kDefaultWindow);
    if (resolved.stride == 0) resolved.stride = std::max<int64_t>(1, resolved.window / 2);
    if (resolved.window < 2) return error("--window must be at least 2, got {}", resolved.window);
    if (resolved.window > max_len)
        return error("--window {} exceeds the model's maximum length {}", resolved.window, max_len);
    if (resolved.stride < 1 || resolved.stride > resolved.window)
        return error("--stride must be in [1, window = {}], got {}", resolved.window, resolved.stride);
    if (resolved.block_size < 1 || resolved.forward_chunk_tokens < 1)
        return error("block_size and forward_chunk_tokens must be positive");

    ExecutorOptions exec;
    exec.max_num_tokens = resolved.forward_chunk_tokens;
    exec.max_num_sequences = 1;
    exec.max_model_len = resolved.window;
    exec.block_size = resolved.block_size;
    ForwardExecutor executor(decoder, exec);
    // The cache on the decoder's device, in its activation dtype (f32 on the CPU).
    KvCacheTensors kv = KvCacheTensors::allocate(
        config, (resolved.window + resolved.block_size - 1) / resolved.block_size, resolved.block_size,
        executor.activation_dtype(), decoder.device() == Device::kCpu ? MemoryKind::kHost : MemoryKind::kDevice);

    PerplexityResult result;
    result.num_tokens = num_tokens;
    result.window = resolved.window;
    result.stride = resolved.stride;
    int64_t prev_end = 0;
    for (int64_t begin = 0; begin < num_tokens; begin += resolved.stride) {
        const int64_t end = std::min(begin + resolved.window, num_tokens);
        const int64_t num_scored = std::min(end - prev_end, end - begin - 1);
        if (num_scored > 0)  // a one-token last window (stride == window) has nothing to score
            result.nll_sum +=
                window_nll(executor, kv, token_ids.subspan(size_t(begin), size_t(end - begin)), num_scored, resolved);
        result.num_scored_tokens += num_scored;
        ++result.num_windows;
        prev_end = end;
        if (end == num_tokens) break;
    }
    return result;
}

}  // namespace taco
