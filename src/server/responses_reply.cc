#include "server/responses_reply.h"

#include <ctime>
#include <random>

#include <fmt/format.h>

namespace taco::server {
namespace {

using json = nlohmann::json;

constexpr const char* kShutdownMessage = "the server is shutting down: the response was aborted before it finished";

std::string random_id(const char* prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return fmt::format("{}_{:016x}{:016x}", prefix, rng(), rng());
}

}  // namespace

ResponsesReply::ResponsesReply(Engine* engine, ServerMetrics* metrics, std::atomic<int64_t>* in_flight,
                               const std::atomic<bool>* aborting, CompletionJob job, ResponsesEcho echo,
                               std::shared_ptr<OutputStream> stream)
    : engine_(engine),
      metrics_(metrics),
      in_flight_(in_flight),
      aborting_(aborting),
      job_(std::move(job)),
      echo_(std::move(echo)),
      stream_(std::move(stream)),
      parser_(job_.chat_output),
      id_(random_id("resp")),
      message_id_(random_id("msg")),
      created_(int64_t(std::time(nullptr))) {
    in_flight_->fetch_add(1);
}

ResponsesReply::~ResponsesReply() {
    if (!done_) cancel();
    in_flight_->fetch_sub(1);
}

void ResponsesReply::cancel() {
    if (!done_) {
        engine_->abort(stream_->id());
        metrics_->requests_aborted++;
    }
    done_ = true;
}

json ResponsesReply::message_item(bool finished) const {
    json content = json::array();
    if (finished || started_)
        content.push_back({{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}});
    return {{"type", "message"},
            {"id", message_id_},
            {"status", finished ? "completed" : "in_progress"},
            {"role", "assistant"},
            {"content", std::move(content)}};
}

json ResponsesReply::response(bool finished) const {
    // "incomplete" when the output stopped at max_output_tokens (or the context), as OpenAI reports it.
    const bool incomplete = finished && finish_reason_ == FinishReason::kLength;
    const char* status = !finished ? "in_progress" : incomplete ? "incomplete" : "completed";
    json r = {{"id", id_},
              {"object", "response"},
              {"created_at", created_},
              {"status", status},
              {"model", job_.model},
              {"output", finished ? json::array({message_item(true)}) : json::array()},
              {"incomplete_details", incomplete ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
              {"error", nullptr},
              {"instructions", echo_.instructions},
              {"max_output_tokens", echo_.max_output_tokens},
              {"temperature", echo_.temperature},
              {"top_p", echo_.top_p},
              {"metadata", echo_.metadata},
              {"user", echo_.user},
              {"parallel_tool_calls", true},
              {"tool_choice", "auto"},
              {"tools", json::array()},
              {"store", false},
              {"text", {{"format", {{"type", "text"}}}}},
              {"usage", nullptr}};
    if (finished)
        r["usage"] = {{"input_tokens", num_prompt_tokens_},
                      {"input_tokens_details", {{"cached_tokens", num_cached_tokens_}}},
                      {"output_tokens", num_generated_},
                      {"output_tokens_details", {{"reasoning_tokens", 0}}},
                      {"total_tokens", num_prompt_tokens_ + num_generated_}};
    return r;
}

void ResponsesReply::event(const char* type, json data, std::string& out) {
    data["type"] = type;
    data["sequence_number"] = sequence_number_++;
    out += fmt::format("event: {}\ndata: {}\n\n", type, data.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool ResponsesReply::poll(std::string& out) {
    if (done_) return true;
    if (!aborted_by_shutdown_ && aborting_->load()) {
        aborted_by_shutdown_ = true;  // the engine ends the request with finish reason "abort"
        engine_->abort(stream_->id());
    }
    if (job_.stream && sequence_number_ == 0) {
        event("response.created", {{"response", response(false)}}, out);
        event("response.in_progress", {{"response", response(false)}}, out);
        event("response.output_item.added", {{"output_index", 0}, {"item", message_item(false)}}, out);
        event("response.content_part.added",
              {{"item_id", message_id_},
               {"output_index", 0},
               {"content_index", 0},
               {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}},
              out);
        started_ = true;
    }
    bool finished = false;
    while (auto output = stream_->try_next()) {
        if (!output->prompt_ids.empty()) num_prompt_tokens_ = int64_t(output->prompt_ids.size());
        num_cached_tokens_ = output->num_cached_tokens;
        if (!output->error.empty()) error_ = output->error;
        for (const SampleOutput& delta : output->samples) {
            if (delta.index != 0) continue;
            num_generated_ += int64_t(delta.token_ids.size());
            const ChatStreamParser::Delta parts = parser_.feed(delta.text, delta.finish_reason.has_value());
            text_ += parts.content;
            if (delta.finish_reason) {
                finish_reason_ = delta.finish_reason;
                switch (*delta.finish_reason) {
                    case FinishReason::kStop: metrics_->finished_stop++; break;
                    case FinishReason::kLength: metrics_->finished_length++; break;
                    case FinishReason::kAbort: metrics_->finished_abort++; break;
                }
            }
            if (job_.stream && !parts.content.empty())
                event("response.output_text.delta",
                      {{"item_id", message_id_},
                       {"output_index", 0},
                       {"content_index", 0},
                       {"delta", parts.content},
                       {"logprobs", json::array()}},
                      out);
        }
        if (output->finished) {
            finished = true;
            break;
        }
    }
    if (!finished) return false;
    done_ = true;
    if (error_.empty()) metrics_->requests_success++;
    if (!job_.stream) return true;
    if (!error_.empty() || cut_by_shutdown()) {
        json failed = response(true);
        failed["status"] = "failed";
        failed["error"] = {{"code", "server_error"}, {"message", error_.empty() ? kShutdownMessage : error_}};
        event("response.failed", {{"response", failed}}, out);
        return true;
    }
    const json part = {{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}};
    event("response.output_text.done",
          {{"item_id", message_id_},
           {"output_index", 0},
           {"content_index", 0},
           {"text", text_},
           {"logprobs", json::array()}},
          out);
    event("response.content_part.done",
          {{"item_id", message_id_}, {"output_index", 0}, {"content_index", 0}, {"part", part}}, out);
    event("response.output_item.done", {{"output_index", 0}, {"item", message_item(true)}}, out);
    const json whole = response(true);
    event(whole["status"] == "incomplete" ? "response.incomplete" : "response.completed", {{"response", whole}}, out);
    return true;
}

Reply ResponsesReply::take_reply() {
    if (!error_.empty())
        return Reply{500, "application/json", error_body({500, error_, "", "InternalServerError"}), {}};
    if (cut_by_shutdown())
        return Reply{503, "application/json", error_body({503, kShutdownMessage, "", "ServiceUnavailableError"}), {}};
    return Reply{200, "application/json", response(true).dump(-1, ' ', false, json::error_handler_t::replace), {}};
}

}  // namespace taco::server
