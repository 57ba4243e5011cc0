#include "server/beam_search_request.h"

#include <fmt/format.h>

#include "core/json_util.h"

namespace taco::server {
namespace {

using json = nlohmann::json;

bool refuse(ApiError& error, std::string message, std::string param) {
    error = ApiError{400, std::move(message), std::move(param)};
    return false;
}

// Fields vLLM's beam search never reads, with the values that leave a plain request unchanged.
bool neutral_sampling_value(const std::string& key, const json& value) {
    if (value.is_null()) return true;
    if (key == "top_p" || key == "repetition_penalty") return value.is_number() && value.get<double>() == 1.0;
    if (key == "top_k") return value.is_number() && (value.get<double>() == 0.0 || value.get<double>() == -1.0);
    if (key == "min_p" || key == "presence_penalty" || key == "frequency_penalty" || key == "min_tokens")
        return value.is_number() && value.get<double>() == 0.0;
    if (key == "response_format") return value.is_object() && value.value("type", "") == "text";
    return (value.is_array() || value.is_object()) && value.empty();  // logit_bias, bad_words, allowed_token_ids
}

constexpr const char* kIgnoredByBeamSearch[] = {"top_p",
                                                "top_k",
                                                "min_p",
                                                "presence_penalty",
                                                "frequency_penalty",
                                                "repetition_penalty",
                                                "logit_bias",
                                                "min_tokens",
                                                "bad_words",
                                                "allowed_token_ids",
                                                "response_format",
                                                "structured_outputs",
                                                "guided_json",
                                                "guided_regex",
                                                "guided_choice",
                                                "guided_grammar",
                                                "guided_whitespace_pattern"};

}  // namespace

bool read_beam_search(const json& body, const SamplingParams& params, const CompletionJob& job,
                      std::optional<BeamSearchParams>& out, ApiError& error) {
    out.reset();
    bool use = false;
    if (body.contains("use_beam_search") && !body.at("use_beam_search").is_null()) {
        if (!body.at("use_beam_search").is_boolean())
            return refuse(error, "'use_beam_search' must be a boolean", "use_beam_search");
        use = body.at("use_beam_search").get<bool>();
    }
    double length_penalty = 1.0;
    if (body.contains("length_penalty") && !body.at("length_penalty").is_null()) {
        const json& value = body.at("length_penalty");
        if (!value.is_number()) return refuse(error, "'length_penalty' must be a number", "length_penalty");
        length_penalty = value.get<double>();
        if (!use && length_penalty != 1.0)
            return refuse(error,
                          fmt::format("'length_penalty' {} applies only to beam search; set 'use_beam_search': true",
                                      json_excerpt(value)),
                          "length_penalty");
    }
    if (body.contains("early_stopping") && !body.at("early_stopping").is_null() &&
        body.at("early_stopping") != json(false))
        return refuse(error,
                      fmt::format("'early_stopping' {} is not supported: beam search runs max_tokens steps, or until "
                                  "every beam has ended, as vLLM's",
                                  json_excerpt(body.at("early_stopping"))),
                      "early_stopping");
    if (!use) return true;

    if (job.stream && job.endpoint == Endpoint::kCompletion)
        return refuse(error, "Streaming is not currently supported with beam search", "stream");
    if (params.n > BeamSearchParams::kMaxBeamWidth)
        return refuse(error,
                      fmt::format("'n' (the beam width) must be at most {} with use_beam_search: each step asks for "
                                  "2 x n top logprobs, at most {}, got {}",
                                  BeamSearchParams::kMaxBeamWidth, SamplingParams::kMaxLogprobs, params.n),
                      "n");
    if (params.best_of && *params.best_of != params.n)
        return refuse(error,
                      fmt::format("'best_of' {} has no meaning with use_beam_search: the search keeps n beams and "
                                  "returns them all",
                                  *params.best_of),
                      "best_of");
    for (const char* key : kIgnoredByBeamSearch) {
        if (!body.contains(key) || neutral_sampling_value(key, body.at(key))) continue;
        return refuse(error,
                      fmt::format("'{}' does not apply to beam search (vLLM's ignores it); drop it or "
                                  "'use_beam_search'",
                                  key),
                      key);
    }
    if (params.grammar)  // a tool_choice that constrains the output
        return refuse(error, "a constrained output (tool_choice) does not apply to beam search", "tool_choice");
    if (job.echo && job.want_logprobs && job.endpoint == Endpoint::kCompletion)
        return refuse(error, "'echo' with 'logprobs' needs the prompt's logprobs, which beam search does not compute",
                      "echo");
    if (params.prompt_logprobs)
        return refuse(error, "'prompt_logprobs' is not computed by beam search", "prompt_logprobs");

    BeamSearchParams p;
    p.beam_width = params.n;
    p.max_tokens = params.max_tokens;
    p.ignore_eos = params.ignore_eos;
    p.length_penalty = length_penalty;
    p.include_stop_str_in_output = params.include_stop_str_in_output;
    p.stop = params.stop;
    p.stop_token_ids = params.stop_token_ids;
    p.skip_special_tokens = params.skip_special_tokens;
    p.logprobs = params.logprobs;
    p.priority = job.priority;
    out = std::move(p);
    return true;
}

}  // namespace taco::server
