// use_beam_search and the fields that go with it (length_penalty, early_stopping) in a /v1/completions or
// /v1/chat/completions body: the search's parameters (engine/beam_search.h), or a 400 naming the field.
//
// As vLLM (to_beam_search_params): n is the beam width and the number of choices; max_tokens, ignore_eos,
// include_stop_str_in_output and length_penalty go to the search; temperature and seed change nothing (the
// candidates' scores are raw logprobs and the search is deterministic). Streaming /v1/completions is refused with
// vLLM's message; a streamed chat reply is accepted, as vLLM does, and sends each choice whole once the search ends.
// Where vLLM silently ignores a field under beam search (the sampling filters and penalties, logit_bias, min_tokens,
// bad_words, allowed_token_ids, structured output, best_of), it is a 400 here unless it has its neutral value; so are
// prompt_logprobs, echo with logprobs, and early_stopping (vLLM's search has none: it runs max_tokens steps).
// length_penalty or early_stopping without use_beam_search is a 400 too: nothing would apply them.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "engine/beam_search.h"
#include "server/openai_request.h"

namespace taco::server {

// `params`: the request's sampling parameters as parsed (n, max_tokens, stop, logprobs, ...). Sets `out` when the
// body asks for beam search; false (with `error`) when the combination is refused.
bool read_beam_search(const nlohmann::json& body, const SamplingParams& params, const CompletionJob& job,
                      std::optional<BeamSearchParams>& out, ApiError& error);

}  // namespace taco::server
