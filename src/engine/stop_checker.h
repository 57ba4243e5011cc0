// Stop strings over a stream of detokenized pieces, with vLLM's meaning (vllm/v1/engine/detokenizer.py,
// check_stop_strings): after each piece, the stop strings are tried in list order and the first one with an
// occurrence ending inside the new piece wins (its earliest such occurrence). The output ends right before
// it, or right after it with include_stop_str_in_output; everything after it is dropped. Fed one token's
// piece at a time, this is the same as vLLM's per-step check, so the concatenation of everything emitted
// (plus flush()) equals vLLM's final output text.
//
// Streaming: text that could still turn out to be the start of a stop string is held back (the longest
// suffix that is a proper prefix of some stop string), and so is an incomplete UTF-8 sequence at the end,
// so no emitted piece ever ends inside a character. Nothing else is held: with include_stop_str_in_output
// a match never removes text before it, so only the UTF-8 tail waits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taco {

class StopChecker {
public:
    StopChecker(std::vector<std::string> stop_strings, bool include_stop_str_in_output);

    struct Step {
        std::string text;  // safe to emit now
        bool stopped = false;
        std::string stop_string;  // the stop string that matched, when stopped by one
        int64_t stop_index = -1;  // its index in stop_strings()
    };

    // Feeds the next piece of output text. can_stop = false while the request has at most min_tokens tokens
    // (vLLM skips the check then, and a stop string must end in text that came after). After a stop, further
    // pushes return nothing.
    Step push(std::string_view piece, bool can_stop = true);
    // At the end of a request that did not stop: the held-back text.
    std::string flush();

    bool stopped() const { return stopped_; }
    const std::vector<std::string>& stop_strings() const { return stop_strings_; }

private:
    size_t held_back_length() const;  // bytes at the end of pending_ that may not be emitted yet

    std::vector<std::string> stop_strings_;
    bool include_stop_str_in_output_;
    std::string pending_;       // received, not yet emitted
    std::string emitted_tail_;  // the last max_stop_length_ - 1 bytes emitted: where a new match may begin
    size_t max_stop_length_ = 0;
    bool stopped_ = false;
};

}  // namespace taco
