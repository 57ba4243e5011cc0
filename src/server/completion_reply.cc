#include "server/completion_reply.h"

#include <algorithm>
#include <ctime>
#include <random>

#include <fmt/format.h>

namespace taco::server {
namespace {

using json = nlohmann::json;

std::string make_id(Endpoint endpoint) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}-{:016x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl", rng());
}

double clamp_logprob(float logprob) { return std::max(double(logprob), -9999.0); }  // -inf is not JSON (vLLM)

json utf8_bytes(const std::string& text) {
    json bytes = json::array();
    for (unsigned char c : text) bytes.push_back(int(c));
    return bytes;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// vLLM's stop_reason: the stop string, the stop token id as an integer, or null (EOS, length).
json stop_reason_json(const std::string& text, std::optional<int32_t> token) {
    if (token) return *token;
    return text.empty() ? json(nullptr) : json(text);
}

}  // namespace

CompletionReply::CompletionReply(Engine* engine, ServerMetrics* metrics, std::atomic<int64_t>* in_flight,
                                 const std::atomic<bool>* aborting, CompletionJob job,
                                 std::vector<std::shared_ptr<OutputStream>> streams, Clock::time_point arrival,
                                 std::vector<std::shared_ptr<BeamSearch>> searches)
    : engine_(engine),
      metrics_(metrics),
      in_flight_(in_flight),
      aborting_(aborting),
      job_(std::move(job)),
      id_(make_id(job_.endpoint)),
      created_(int64_t(std::time(nullptr))),
      arrival_(arrival) {
    searches_ = std::move(searches);
    in_flight_->fetch_add(1);
    for (auto& stream : streams) {
        Track track;
        track.stream = std::move(stream);
        tracks_.push_back(std::move(track));
    }
    choices_.resize(tracks_.size() * size_t(job_.n));
}

CompletionReply::~CompletionReply() {
    if (!done_) cancel();
    in_flight_->fetch_sub(1);
}

void CompletionReply::abort_track(size_t t) {
    if (t < searches_.size())
        searches_[t]->cancel();  // its stream's id is no engine request's
    else
        engine_->abort(tracks_[t].stream->id());
}

void CompletionReply::cancel() {
    for (size_t t = 0; t < tracks_.size(); ++t) {
        Track& track = tracks_[t];
        if (track.finished) continue;
        abort_track(t);
        track.finished = true;
        metrics_->requests_aborted++;
    }
    done_ = true;
}

std::string CompletionReply::sse(const json& value) {
    return "data: " + value.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json CompletionReply::chunk_base() const {
    const bool chat = job_.endpoint == Endpoint::kChat;
    const char* object = chat ? (job_.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json{{"id", id_},
                {"object", object},
                {"created", created_},
                {"model", job_.model},
                {"system_fingerprint", job_.system_fingerprint}};
}

json CompletionReply::usage() const {
    int64_t prompt = 0, completion = 0, cached = 0;
    for (const Track& track : tracks_) {
        prompt += int64_t(track.prompt_ids.size());
        completion += track.num_generated;
        cached += track.num_cached_tokens;
    }
    json out = {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
    if (job_.prompt_tokens_details && cached > 0) out["prompt_tokens_details"] = {{"cached_tokens", cached}};
    return out;
}

std::string CompletionReply::logprob_token(int32_t token) const {
    if (job_.return_tokens_as_token_ids) return fmt::format("token_id:{}", token);
    return token_text(engine_->tokenizer(), token);
}

json CompletionReply::completion_logprobs(const Track* echo_prompt, const std::vector<SampleLogprobs>& logprobs,
                                          int64_t& text_offset) const {
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
    // `lp` null: a token without logprobs (the first prompt token).
    auto add = [&](int32_t token, const SampleLogprobs* lp) {
        const std::string text = logprob_token(token);
        tokens.push_back(text);
        offsets.push_back(text_offset);
        text_offset += int64_t(text.size());
        if (!lp) {
            token_logprobs.push_back(nullptr);
            top_logprobs.push_back(nullptr);
            return;
        }
        token_logprobs.push_back(clamp_logprob(lp->sampled.logprob));
        json top = json::object();
        top[text] = clamp_logprob(lp->sampled.logprob);
        for (const TokenLogprob& t : lp->top) top[logprob_token(t.token)] = clamp_logprob(t.logprob);
        top_logprobs.push_back(std::move(top));
    };
    if (echo_prompt) {
        const auto& ids = echo_prompt->prompt_ids;
        const auto& prompt = echo_prompt->prompt_logprobs;
        for (size_t i = 0; i < ids.size(); ++i) add(ids[i], i >= 1 && i - 1 < prompt.size() ? &prompt[i - 1] : nullptr);
    }
    for (const SampleLogprobs& lp : logprobs) add(lp.sampled.token, &lp);
    return json{{"tokens", tokens},
                {"token_logprobs", token_logprobs},
                {"top_logprobs", top_logprobs},
                {"text_offset", offsets}};
}

json CompletionReply::vllm_prompt_logprobs(const Track& track) const {
    const Tokenizer* tokenizer = engine_->tokenizer();
    json list = json::array();
    if (track.prompt_ids.empty()) return list;
    list.push_back(nullptr);
    for (const SampleLogprobs& lp : track.prompt_logprobs) {
        json entry = json::object();
        auto add = [&](int32_t token, float logprob, int64_t rank) {
            const std::string key = std::to_string(token);
            if (entry.contains(key)) return;
            entry[key] = {
                {"logprob", clamp_logprob(logprob)}, {"rank", rank}, {"decoded_token", token_text(tokenizer, token)}};
        };
        add(lp.sampled.token, lp.sampled.logprob, lp.sampled_rank);
        for (size_t k = 0; k < lp.top.size(); ++k) add(lp.top[k].token, lp.top[k].logprob, int64_t(k) + 1);
        list.push_back(std::move(entry));
    }
    return list;
}

json CompletionReply::chat_logprobs(const std::vector<SampleLogprobs>& logprobs) const {
    json content = json::array();
    for (const SampleLogprobs& lp : logprobs) {
        const std::string text = logprob_token(lp.sampled.token);
        json top = json::array();
        for (const TokenLogprob& t : lp.top) {
            const std::string top_text = logprob_token(t.token);
            top.push_back(
                {{"token", top_text}, {"logprob", clamp_logprob(t.logprob)}, {"bytes", utf8_bytes(top_text)}});
        }
        content.push_back({{"token", text},
                           {"logprob", clamp_logprob(lp.sampled.logprob)},
                           {"bytes", utf8_bytes(text)},
                           {"top_logprobs", top}});
    }
    return json{{"content", content}, {"refusal", nullptr}};
}

std::vector<json> CompletionReply::chat_deltas(Choice& choice, const SampleOutput& delta) {
    if (!choice.parser) choice.parser = std::make_unique<ChatStreamParser>(job_.chat_output);
    const ChatStreamParser::Delta parts = choice.parser->feed(delta.text, delta.finish_reason.has_value());
    std::vector<json> deltas;
    json d = json::object();
    if (!parts.reasoning.empty()) d["reasoning_content"] = parts.reasoning;
    if (!parts.content.empty()) d["content"] = parts.content;
    if (!d.empty()) deltas.push_back(std::move(d));
    // As vLLM streams calls: {index, id, type, function: {name}} first, then {index, function: {arguments}}.
    for (const ToolCallDelta& t : parts.tool_calls) {
        json call = {{"index", t.index}};
        json function = json::object();
        if (t.id) {
            call["id"] = *t.id;
            call["type"] = "function";
        }
        if (t.name) function["name"] = *t.name;
        if (!t.arguments.empty() || !t.name) function["arguments"] = t.arguments;
        call["function"] = std::move(function);
        deltas.push_back({{"tool_calls", json::array({std::move(call)})}});
    }
    const bool parsing = job_.chat_output.reasoning || job_.chat_output.tool_format || job_.chat_output.named_arguments;
    if (deltas.empty()) deltas.push_back(delta.finish_reason || parsing ? json::object() : json{{"content", ""}});
    return deltas;
}

void CompletionReply::append_chunk(size_t index, const SampleOutput& delta, std::string& out) {
    Choice& choice = choices_[index];
    std::vector<json> chat;
    if (job_.endpoint == Endpoint::kChat) {
        chat = chat_deltas(choice, delta);
        // Text held back by a parser with nothing else to say: no chunk.
        if (chat.size() == 1 && chat[0].empty() && !delta.finish_reason && !job_.want_logprobs &&
            !job_.return_token_ids && !job_.continuous_usage)
            return;
    }
    const size_t num_chunks = job_.endpoint == Endpoint::kChat ? chat.size() : 1;
    for (size_t k = 0; k < num_chunks; ++k) {
        const bool first = k == 0, last = k + 1 == num_chunks;
        json c = {{"index", index}};
        if (job_.endpoint == Endpoint::kCompletion) {
            std::string text = delta.text;
            const bool echo_now = !choice.started && job_.echo;
            if (echo_now) text = job_.echo_texts[index / size_t(job_.n)] + text;
            c["text"] = text;
            const Track* echo_prompt = echo_now ? &tracks_[index / size_t(job_.n)] : nullptr;
            c["logprobs"] = job_.want_logprobs ? completion_logprobs(echo_prompt, delta.logprobs, text_offsets_[index])
                                               : json(nullptr);
        } else {
            c["delta"] = std::move(chat[k]);
            c["logprobs"] = job_.want_logprobs && first ? chat_logprobs(delta.logprobs) : json(nullptr);
        }
        json finish = nullptr;
        if (delta.finish_reason && last) {
            const std::string reason(finish_reason_name(*delta.finish_reason));
            finish = job_.endpoint == Endpoint::kChat
                         ? chat_finish_reason(job_.chat_output, choice.parser->called_tools(), reason)
                         : reason;
        }
        c["finish_reason"] = finish;
        c["stop_reason"] = last ? stop_reason_json(delta.stop_reason, delta.stop_token_id) : json(nullptr);
        if (job_.return_token_ids) c["token_ids"] = first ? json(delta.token_ids) : json::array();
        choice.started = true;
        json chunk = chunk_base();
        chunk["choices"] = json::array({c});
        if (job_.continuous_usage) chunk["usage"] = usage();
        out += sse(chunk);
    }
}

json CompletionReply::chat_message(const Choice& choice, const std::string& echo, std::string& finish_reason) const {
    const ChatOutputOptions& options = job_.chat_output;
    ChatMessageParts parts = parse_chat_output(options, choice.text);
    if (!echo.empty()) parts.content = echo + parts.content.value_or("");
    json calls = json::array();
    for (const ToolCall& call : parts.tool_calls)
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    json message = {{"role", job_.role},
                    {"content", parts.content ? json(*parts.content) : json(nullptr)},
                    {"refusal", nullptr},
                    {"tool_calls", std::move(calls)}};
    if (options.reasoning) message["reasoning_content"] = parts.reasoning ? json(*parts.reasoning) : json(nullptr);
    if (!finish_reason.empty()) finish_reason = chat_finish_reason(options, !parts.tool_calls.empty(), finish_reason);
    return message;
}

void CompletionReply::record_finish(Track& track) {
    const auto now = Clock::now();
    metrics_->e2e_request_latency.observe(seconds(now - arrival_));
    if (track.first_token && track.num_generated > 1)
        metrics_->time_per_output_token.observe(seconds(now - *track.first_token) / double(track.num_generated - 1));
    if (track.first_scheduled_at) {
        metrics_->request_queue_time.observe(seconds(*track.first_scheduled_at - track.queued_at));
        metrics_->request_inference_time.observe(seconds(now - *track.first_scheduled_at));
        if (track.first_token)
            metrics_->request_prefill_time.observe(seconds(*track.first_token - *track.first_scheduled_at));
    }
    if (track.first_token) metrics_->request_decode_time.observe(seconds(now - *track.first_token));
    metrics_->request_prompt_tokens.observe(double(track.prompt_ids.size()));
    metrics_->request_generation_tokens.observe(double(track.num_generated));
    metrics_->request_params_n.observe(double(job_.n));
    metrics_->request_params_max_tokens.observe(double(job_.max_tokens));
    if (track.error.empty()) metrics_->requests_success++;
}

bool CompletionReply::poll(std::string& out) {
    if (done_) return true;
    if (!aborted_by_shutdown_ && aborting_->load()) {
        // The engine ends each request with finish reason "abort", which the loop below turns into the last chunks.
        aborted_by_shutdown_ = true;
        for (size_t t = 0; t < tracks_.size(); ++t)
            if (!tracks_[t].finished) abort_track(t);
    }
    if (job_.stream && job_.endpoint == Endpoint::kChat) {
        for (size_t i = 0; i < choices_.size(); ++i) {  // the role comes first, as OpenAI sends it
            if (choices_[i].started) continue;
            choices_[i].started = true;
            json chunk = chunk_base();
            chunk["choices"] = json::array({{{"index", i},
                                             {"delta", {{"role", job_.role}, {"content", ""}}},
                                             {"logprobs", nullptr},
                                             {"finish_reason", nullptr}}});
            out += sse(chunk);
            // echo: the last message's content next, as its own delta (vLLM).
            const std::string& echo = job_.echo_texts[i / size_t(job_.n)];
            if (job_.echo && !echo.empty()) {
                chunk["choices"][0]["delta"] = {{"content", echo}};
                out += sse(chunk);
            }
        }
    }
    bool all_finished = true;
    for (size_t t = 0; t < tracks_.size(); ++t) {
        Track& track = tracks_[t];
        while (!track.finished) {
            auto output = track.stream->try_next();
            if (!output) break;
            if (!output->prompt_ids.empty()) track.prompt_ids = output->prompt_ids;
            if (!output->prompt_logprobs.empty()) track.prompt_logprobs = std::move(output->prompt_logprobs);
            track.num_cached_tokens = output->num_cached_tokens;
            track.queued_at = output->queued_at;
            if (output->first_scheduled_at) track.first_scheduled_at = output->first_scheduled_at;
            if (!output->error.empty()) track.error = output->error;
            for (const SampleOutput& delta : output->samples) {
                if (delta.index < 0 || delta.index >= job_.n) continue;
                const size_t index = t * size_t(job_.n) + size_t(delta.index);
                if (!delta.token_ids.empty()) {
                    const auto now = Clock::now();
                    // Inter-token latency: each token after the first gets an equal share of the time since the
                    // previous delta (tokens that arrive together, with the first, get 0).
                    size_t num_gaps = delta.token_ids.size();
                    double gap = 0;
                    if (!track.first_token) {
                        track.first_token = now;
                        metrics_->time_to_first_token.observe(seconds(now - arrival_));
                        num_gaps--;
                    } else {
                        gap = seconds(now - *track.last_token) / double(num_gaps);
                    }
                    for (size_t k = 0; k < num_gaps; ++k) metrics_->inter_token_latency.observe(gap);
                    track.last_token = now;
                }
                track.num_generated += int64_t(delta.token_ids.size());
                Choice& choice = choices_[index];
                choice.token_ids.insert(choice.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
                choice.text += delta.text;
                choice.logprobs.insert(choice.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
                if (delta.finish_reason) {
                    switch (*delta.finish_reason) {
                        case FinishReason::kStop: metrics_->finished_stop++; break;
                        case FinishReason::kLength: metrics_->finished_length++; break;
                        case FinishReason::kAbort: metrics_->finished_abort++; break;
                    }
                    choice.finish_reason = finish_reason_name(*delta.finish_reason);
                    choice.stop_reason = delta.stop_reason;
                    choice.stop_token_id = delta.stop_token_id;
                    choice.finished = true;
                }
                if (job_.stream) append_chunk(index, delta, out);
            }
            if (output->finished) {
                track.finished = true;
                record_finish(track);
                if (job_.stream && !track.error.empty()) {
                    ApiError error{500, track.error, "", "InternalServerError"};
                    out += "data: " + error_body(error) + "\n\n";
                }
            }
        }
        all_finished = all_finished && track.finished;
    }
    if (!all_finished) return false;
    done_ = true;
    if (job_.stream) {
        if (job_.include_usage) {
            json chunk = chunk_base();
            chunk["choices"] = json::array();
            chunk["usage"] = usage();
            out += sse(chunk);
        }
        out += "data: [DONE]\n\n";
    }
    return true;
}

Reply CompletionReply::take_reply() {
    for (const Track& track : tracks_)
        if (!track.error.empty())
            return Reply{500, "application/json", error_body({500, track.error, "", "InternalServerError"}), {}};
    const bool cut =
        std::any_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.finish_reason == "abort"; });
    if (aborted_by_shutdown_ && cut)
        return Reply{503,
                     "application/json",
                     error_body({503, "the server is shutting down: the request was aborted before it finished", "",
                                 "ServiceUnavailableError"}),
                     {}};
    json choices = json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
        const Choice& choice = choices_[i];
        const Track& track = tracks_[i / size_t(job_.n)];
        std::string finish_reason = choice.finish_reason;
        json c = {{"index", i}};
        if (job_.endpoint == Endpoint::kCompletion) {
            c["text"] = (job_.echo ? job_.echo_texts[i / size_t(job_.n)] : "") + choice.text;
            int64_t offset = 0;
            c["logprobs"] = job_.want_logprobs
                                ? completion_logprobs(job_.echo ? &track : nullptr, choice.logprobs, offset)
                                : json(nullptr);
            if (job_.want_prompt_logprobs_field) c["prompt_logprobs"] = vllm_prompt_logprobs(track);
        } else {
            c["message"] = chat_message(choice, job_.echo ? job_.echo_texts[i / size_t(job_.n)] : "", finish_reason);
            c["logprobs"] = job_.want_logprobs ? chat_logprobs(choice.logprobs) : json(nullptr);
        }
        c["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
        c["stop_reason"] = stop_reason_json(choice.stop_reason, choice.stop_token_id);
        if (job_.return_token_ids) {
            c["token_ids"] = choice.token_ids;
            c["prompt_token_ids"] = track.prompt_ids;
        }
        choices.push_back(std::move(c));
    }
    json body = chunk_base();
    body["choices"] = std::move(choices);
    body["usage"] = usage();
    if (job_.endpoint == Endpoint::kChat && job_.want_prompt_logprobs_field)
        body["prompt_logprobs"] = vllm_prompt_logprobs(tracks_.at(0));
    return Reply{200, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace), {}};
}

}  // namespace taco::server
