// CompletionReply: the engine requests of one /v1/completions or /v1/chat/completions call, turned into
// OpenAI's response (one JSON) or its SSE chunks as outputs arrive. Polled by the connection's strand; never
// blocks. Destroying it before the end aborts the engine requests, which frees their KV blocks. Once the server's
// shutdown gives up waiting (`*aborting` set) the next poll aborts them and the reply ends as vLLM ends a stream cut
// short: each unfinished choice's last chunk has finish_reason "abort", then usage if asked and [DONE]; a whole
// reply becomes a 503.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/beam_search.h"
#include "engine/engine.h"
#include "server/chat_output.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"

namespace taco::server {

class CompletionReply : public PendingReply {
public:
    using Clock = std::chrono::steady_clock;

    // Takes the streams of the submitted job (one per input, in order); with use_beam_search, `searches` holds input
    // i's BeamSearch, whose stream is streams[i] (cancelled with the reply). `in_flight` counts live replies;
    // `aborting`, set by the server's shutdown, ends the reply as aborted.
    CompletionReply(Engine* engine, ServerMetrics* metrics, std::atomic<int64_t>* in_flight,
                    const std::atomic<bool>* aborting, CompletionJob job,
                    std::vector<std::shared_ptr<OutputStream>> streams, Clock::time_point arrival,
                    std::vector<std::shared_ptr<BeamSearch>> searches = {});
    ~CompletionReply() override;

    bool streaming() const override { return job_.stream; }
    bool poll(std::string& out) override;
    Reply take_reply() override;
    void cancel() override;
    // The reply's id ("chatcmpl-...", "cmpl-...", "resp_..."), for X-Request-Id and the request log.
    const std::string& id() const { return id_; }

private:
    struct Choice {  // one sample of one prompt
        std::vector<int32_t> token_ids;
        std::string text;
        std::vector<SampleLogprobs> logprobs;
        std::string finish_reason;
        std::string stop_reason;
        std::optional<int32_t> stop_token_id;
        bool started = false;  // streaming: the first chunk (role / echo) went out
        bool finished = false;
        std::unique_ptr<ChatStreamParser> parser;  // streaming chat: reasoning / tool calls split out as they come
    };
    struct Track {  // one engine request
        std::shared_ptr<OutputStream> stream;
        std::vector<int32_t> prompt_ids;
        std::vector<SampleLogprobs> prompt_logprobs;  // of prompt tokens 1.., when computed
        int64_t num_cached_tokens = 0;
        int64_t num_generated = 0;
        std::optional<Clock::time_point> first_token;
        std::optional<Clock::time_point> last_token;  // when the latest delta with tokens came
        Clock::time_point queued_at;                  // RequestOutput::queued_at / first_scheduled_at
        std::optional<Clock::time_point> first_scheduled_at;
        bool finished = false;
        std::string error;
    };

    nlohmann::json chunk_base() const;
    nlohmann::json usage() const;
    // OpenAI's legacy logprobs object; with `echo_prompt`, the prompt's tokens come first (the first one with
    // null logprobs, as it has no context).
    nlohmann::json completion_logprobs(const Track* echo_prompt, const std::vector<SampleLogprobs>& logprobs,
                                       int64_t& text_offset) const;
    // vLLM's prompt_logprobs: null for the first token, then {token id: {logprob, rank, decoded_token}}.
    nlohmann::json vllm_prompt_logprobs(const Track& track) const;
    nlohmann::json chat_logprobs(const std::vector<SampleLogprobs>& logprobs) const;
    // The chat message of a finished choice: content, tool_calls and reasoning_content parsed out of its text.
    // `echo`: text before the reply's content (chat echo).
    nlohmann::json chat_message(const Choice& choice, const std::string& echo, std::string& finish_reason) const;
    // A token as logprobs name it: its text, or "token_id:N" with return_tokens_as_token_ids.
    std::string logprob_token(int32_t token) const;
    // Streaming chat: the deltas (one chunk each) of one engine delta.
    std::vector<nlohmann::json> chat_deltas(Choice& choice, const SampleOutput& delta);
    // Streaming: the chunk text for one delta of choice `index`.
    void append_chunk(size_t index, const SampleOutput& delta, std::string& out);
    void record_finish(Track& track);
    // Aborts track t's engine request (or beam search): it ends with finish reason "abort".
    void abort_track(size_t t);
    static std::string sse(const nlohmann::json& value);

    Engine* engine_;
    ServerMetrics* metrics_;
    std::atomic<int64_t>* in_flight_;
    const std::atomic<bool>* aborting_;
    bool aborted_by_shutdown_ = false;  // this reply's engine requests were aborted by the shutdown
    CompletionJob job_;
    std::vector<Track> tracks_;
    std::vector<std::shared_ptr<BeamSearch>> searches_;  // empty, or one per track
    std::vector<Choice> choices_;                        // prompt i, sample j -> i * n + j
    std::map<size_t, int64_t> text_offsets_;
    std::string id_;
    int64_t created_ = 0;
    Clock::time_point arrival_;
    bool done_ = false;
};

}  // namespace taco::server
