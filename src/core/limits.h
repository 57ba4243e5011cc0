// Every limit on untrusted input (request bodies, model files, templates, CLI inputs), in one place, so a
// reviewer can see what a hostile input can cost. Each is enforced where the input is parsed, before any
// allocation proportional to the offending value, and its error names the limit.
//
// Limits that depend on how the server was started are flags, not constants:
//   --max-pending-requests  HTTP requests in flight; also the most engine sequences one request may start
//                           (prompts x max(n, best_of)), so a `prompt` list cannot bypass it.
//   --max-model-len         prompt + max_tokens of one sequence (the error's param names the field).
// The HTTP layer's sizes (body, header and trailer bytes) live in server/http_server.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taco::limits {

// JSON: containers nested deeper than this are refused at parse time (request bodies, tokenizer.json,
// tokenizer_config.json, config.json, safetensors headers, --prompts-file lines, detokenize stdin). Real files
// nest fewer than 10 levels; the bound keeps every recursive walk (printing, copying, template values) shallow.
inline constexpr int kMaxJsonDepth = 128;
// An error message quotes at most this many characters of an offending value, and nests at most
// kMaxJsonExcerptDepth levels into it ("[[[...]]]").
inline constexpr size_t kMaxJsonExcerptChars = 200;
inline constexpr int kMaxJsonExcerptDepth = 4;

// Sampling: n and best_of of one prompt. vLLM has no fixed maximum; ours keeps a request's forks within a few
// scheduler steps of the default --max-num-seqs (256).
inline constexpr int64_t kMaxSamplesPerPrompt = 256;

// Stop conditions of one request: every generated token is checked against each stop string (over a window as
// long as the longest) and each stop token id, so their number and size bound that per-token work. OpenAI allows
// 4 stop strings; vLLM sets no bound.
inline constexpr size_t kMaxStopStrings = 256;
inline constexpr size_t kMaxStopStringBytes = 4096;  // one stop string
inline constexpr size_t kMaxStopTokenIds = 4096;

// Engine flags that size per-step buffers (workspace, batch, logits) before anything runs: the buffers grow
// with their product, so each is bounded (vLLM's defaults are 8192 / 256; these are 128x / 64x above).
inline constexpr int64_t kMaxBatchedTokens = int64_t(1) << 20;  // --max-num-batched-tokens
inline constexpr int64_t kMaxNumSeqs = int64_t(1) << 14;        // --max-num-seqs

// Model files: every size read from config.json must fit these before any product of them is formed, so that
// products (hidden_size * vocab_size, layers * heads * head_dim ...) cannot overflow int64.
inline constexpr int64_t kMaxModelDim = int64_t(1) << 24;     // hidden, intermediate, vocab, heads, head_dim ...
inline constexpr int64_t kMaxModelLayers = int64_t(1) << 12;  // num_hidden_layers
inline constexpr int64_t kMaxModelPositions = int64_t(1)
                                              << 30;  // max_position_embeddings, sliding_window, max_model_len
// A vocabulary id in tokenizer.json (model vocab, added_tokens): id tables are dense, so this bounds their memory
// (4M entries; the largest real vocabularies hold about 260k).
inline constexpr int64_t kMaxTokenId = (int64_t(1) << 22) - 1;

// Chat templates (tokenizer/jinja/evaluator.h RenderLimits takes its defaults from these): a template runs in
// bounded memory and time whatever it does (a list doubled 40 times, a string repeated, a loop of appends).
inline constexpr size_t kMaxTemplateOutputBytes = size_t(64) << 20;  // rendered text, and any one string value
inline constexpr int64_t kMaxTemplateSteps = 5'000'000;              // statements + loop iterations + calls
inline constexpr size_t kMaxTemplateListItems = size_t(1) << 20;     // items of any one list, tuple or dict view
// Summed over one render, whether or not the values are still alive: list items and string bytes built.
inline constexpr int64_t kMaxTemplateBuiltItems = int64_t(1) << 23;
inline constexpr int64_t kMaxTemplateBuiltBytes = int64_t(256) << 20;
inline constexpr int kMaxTemplateNesting = 200;    // nested blocks when parsing (tokenizer/jinja/parser.cc)
inline constexpr int kMaxTemplateExprDepth = 300;  // an expression's tree height (parser.cc)
inline constexpr int kMaxTemplateEvalDepth = 400;  // recursion of one evaluation (evaluator.cc)
// A value's nesting inside a template: its JSON inputs (at most kMaxJsonDepth after parsing, checked again at
// render) and what the template builds from them. Every recursive walk of a value (printing, tojson, ==) stays
// within it.
inline constexpr int kMaxTemplateValueDepth = 256;

}  // namespace taco::limits
