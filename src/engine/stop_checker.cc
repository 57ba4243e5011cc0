#include "engine/stop_checker.h"

#include <algorithm>
#include <utility>

namespace taco {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Length of the UTF-8 sequence a lead byte starts; 1 for ASCII and for bytes that cannot lead.
size_t sequence_length(char c) {
    const auto b = static_cast<unsigned char>(c);
    if ((b & 0xE0) == 0xC0) return 2;
    if ((b & 0xF0) == 0xE0) return 3;
    if ((b & 0xF8) == 0xF0) return 4;
    return 1;
}

// The largest cut <= end of `text` that does not split a UTF-8 sequence. Invalid bytes are left alone.
size_t character_boundary(std::string_view text, size_t end) {
    size_t lead = end;
    size_t continuations = 0;
    while (lead > 0 && continuations < 4 && is_continuation(text[lead - 1])) {
        --lead;
        ++continuations;
    }
    if (lead == 0) return end;  // no lead byte: not UTF-8 we can reason about
    --lead;
    const size_t length = sequence_length(text[lead]);
    return length > 1 && lead + length > end ? lead : end;
}

}  // namespace

StopChecker::StopChecker(std::vector<std::string> stop_strings, bool include_stop_str_in_output)
    : stop_strings_(std::move(stop_strings)), include_stop_str_in_output_(include_stop_str_in_output) {
    for (const std::string& stop : stop_strings_) max_stop_length_ = std::max(max_stop_length_, stop.size());
}

StopChecker::Step StopChecker::push(std::string_view piece, bool can_stop) {
    Step step;
    if (stopped_) {
        step.stopped = true;
        return step;
    }
    const size_t old_length = pending_.size();
    pending_.append(piece);
    if (can_stop && !piece.empty()) {
        // Search the emitted tail too: with include_stop_str_in_output a match may begin in emitted text.
        const std::string text = emitted_tail_ + pending_;
        const size_t new_from = emitted_tail_.size() + old_length;
        for (size_t i = 0; i < stop_strings_.size(); ++i) {
            const std::string& stop = stop_strings_[i];
            if (stop.empty()) continue;  // validate() rejects it; it would match everywhere
            // Only occurrences that end inside the new piece are new (earlier text was checked already).
            const size_t from = new_from + 1 > stop.size() ? new_from + 1 - stop.size() : 0;
            const size_t at = text.find(stop, from);
            if (at == std::string::npos) continue;
            // Held-back text covers every stop prefix, so a match that excludes the stop string never
            // begins in emitted text; one that includes it ends in the new piece.
            const size_t end = std::max(include_stop_str_in_output_ ? at + stop.size() : at, emitted_tail_.size());
            step.text = text.substr(emitted_tail_.size(), end - emitted_tail_.size());
            step.stopped = true;
            step.stop_string = stop;
            step.stop_index = int64_t(i);
            pending_.clear();
            stopped_ = true;
            return step;
        }
    }
    const size_t emit = pending_.size() - held_back_length();
    step.text = pending_.substr(0, emit);
    pending_.erase(0, emit);
    emitted_tail_ += step.text;
    const size_t keep = max_stop_length_ > 0 ? max_stop_length_ - 1 : 0;
    if (emitted_tail_.size() > keep) emitted_tail_.erase(0, emitted_tail_.size() - keep);
    return step;
}

std::string StopChecker::flush() {
    if (stopped_) return {};
    return std::exchange(pending_, {});
}

size_t StopChecker::held_back_length() const {
    size_t hold = 0;
    if (!include_stop_str_in_output_) {
        const std::string_view text = pending_;
        for (const std::string& stop : stop_strings_) {
            if (stop.empty()) continue;
            // Proper prefixes only: a whole stop string in held text can no longer match (can_stop was off).
            for (size_t k = std::min(stop.size() - 1, text.size()); k > hold; --k) {
                if (text.ends_with(std::string_view(stop).substr(0, k))) {
                    hold = k;
                    break;
                }
            }
        }
    }
    return pending_.size() - character_boundary(pending_, pending_.size() - hold);
}

}  // namespace taco
