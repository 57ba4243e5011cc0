// ResponsesReply: one /v1/responses request's engine output as a Response object, or as the Responses API's
// streaming events (response.created, response.output_text.delta, ..., response.completed), each an SSE
// "event: <type>" with its JSON. Text output only: one message item with one output_text part. Polled by the
// connection's strand; destroying it before the end aborts the engine request. Once the server's shutdown gives up
// waiting (`*aborting` set) the next poll aborts it: a stream then ends with response.failed (the partial output and
// a server_error naming the shutdown), a whole reply is a 503.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/chat_output.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/responses_request.h"

namespace taco::server {

class ResponsesReply : public PendingReply {
public:
    // `job` is the parsed chat request of the Responses request (one input, n 1), `stream` its submitted output.
    ResponsesReply(Engine* engine, ServerMetrics* metrics, std::atomic<int64_t>* in_flight,
                   const std::atomic<bool>* aborting, CompletionJob job, ResponsesEcho echo,
                   std::shared_ptr<OutputStream> stream);
    ~ResponsesReply() override;

    bool streaming() const override { return job_.stream; }
    bool poll(std::string& out) override;
    Reply take_reply() override;
    void cancel() override;
    // The reply's id ("chatcmpl-...", "cmpl-...", "resp_..."), for X-Request-Id and the request log.
    const std::string& id() const { return id_; }

private:
    // The Response object as it stands: status "in_progress" until the output has finished.
    nlohmann::json response(bool finished) const;
    nlohmann::json message_item(bool finished) const;
    void event(const char* type, nlohmann::json data, std::string& out);
    // The output ended because the shutdown aborted it (not because it finished first).
    bool cut_by_shutdown() const { return aborted_by_shutdown_ && finish_reason_ == FinishReason::kAbort; }

    Engine* engine_;
    ServerMetrics* metrics_;
    std::atomic<int64_t>* in_flight_;
    const std::atomic<bool>* aborting_;
    bool aborted_by_shutdown_ = false;  // the engine request was aborted by the shutdown
    CompletionJob job_;
    ResponsesEcho echo_;
    std::shared_ptr<OutputStream> stream_;
    ChatStreamParser parser_;
    std::string id_, message_id_;
    int64_t created_ = 0;
    std::string text_;  // the reply's content so far (reasoning split out when a parser is set)
    int64_t num_prompt_tokens_ = 0, num_generated_ = 0, num_cached_tokens_ = 0;
    std::optional<FinishReason> finish_reason_;
    std::string error_;
    int64_t sequence_number_ = 0;
    bool started_ = false, done_ = false;
};

}  // namespace taco::server
