#include "tokenizer/split_pattern.h"

#include "core/json_util.h"

#include <algorithm>

namespace taco {

Result<SplitPattern> SplitPattern::from_json(const nlohmann::json& j) {
    if (j.is_object() && j.contains("String") && j["String"].is_string()) {
        return literal(j["String"].get<std::string>());
    }
    if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
        return regex(j["Regex"].get<std::string>());
    }
    return error("pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", json_excerpt(j));
}

SplitPattern SplitPattern::literal(std::string text) {
    SplitPattern p;
    p.literal_ = std::move(text);
    return p;
}

Result<SplitPattern> SplitPattern::regex(const std::string& pattern) {
    TACO_ASSIGN_OR_RETURN(auto re, Regex::compile(pattern));
    SplitPattern p;
    p.regex_ = std::move(re);
    return p;
}

std::vector<std::pair<std::pair<size_t, size_t>, bool>> SplitPattern::find_matches(std::string_view text) const {
    std::vector<std::pair<std::pair<size_t, size_t>, bool>> out;
    if (text.empty()) {
        out.push_back({{0, 0}, false});
        return out;
    }
    if (!regex_ && literal_.empty()) {
        out.push_back({{0, text.size()}, false});
        return out;
    }
    size_t prev = 0;
    auto add = [&](size_t s, size_t e) {
        if (prev != s) out.push_back({{prev, s}, false});
        out.push_back({{s, e}, true});
        prev = e;
    };
    if (regex_) {
        for (auto [s, e] : regex_->find_all(text)) add(s, e);
    } else {
        for (size_t pos = text.find(literal_); pos != std::string_view::npos; pos = text.find(literal_, pos)) {
            add(pos, pos + literal_.size());
            pos += literal_.size();
        }
    }
    if (prev != text.size()) out.push_back({{prev, text.size()}, false});
    return out;
}

std::string SplitPattern::replace_all(std::string_view text, std::string_view content) const {
    std::string out;
    out.reserve(text.size());
    for (const auto& [range, is_match] : find_matches(text)) {
        if (is_match) {
            out.append(content);
        } else {
            out.append(text.substr(range.first, range.second - range.first));
        }
    }
    return out;
}

Result<SplitBehavior> parse_split_behavior(const nlohmann::json& j) {
    std::string s = j.is_string() ? j.get<std::string>() : "";
    if (s == "Removed") return SplitBehavior::kRemoved;
    if (s == "Isolated") return SplitBehavior::kIsolated;
    if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
    if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
    if (s == "Contiguous") return SplitBehavior::kContiguous;
    return error("unknown split behavior {}", json_excerpt(j));
}

std::vector<std::pair<size_t, size_t>> apply_split_behavior(
    const std::vector<std::pair<std::pair<size_t, size_t>, bool>>& matches, SplitBehavior behavior) {
    std::vector<std::pair<size_t, size_t>> out;
    switch (behavior) {
        case SplitBehavior::kIsolated:
            for (const auto& m : matches) out.push_back(m.first);
            break;
        case SplitBehavior::kRemoved:
            for (const auto& m : matches) {
                if (!m.second) out.push_back(m.first);
            }
            break;
        case SplitBehavior::kContiguous: {
            bool previous_match = false;
            for (const auto& [range, is_match] : matches) {
                if (is_match == previous_match && !out.empty()) {
                    out.back().second = range.second;
                } else {
                    out.push_back(range);
                }
                previous_match = is_match;
            }
            break;
        }
        case SplitBehavior::kMergedWithPrevious: {
            bool previous_match = false;
            for (const auto& [range, is_match] : matches) {
                if (is_match && !previous_match && !out.empty()) {
                    out.back().second = range.second;
                } else {
                    out.push_back(range);
                }
                previous_match = is_match;
            }
            break;
        }
        case SplitBehavior::kMergedWithNext: {
            bool previous_match = false;
            for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
                const auto& [range, is_match] = *it;
                if (is_match && !previous_match && !out.empty()) {
                    out.back().first = range.first;
                } else {
                    out.push_back(range);
                }
                previous_match = is_match;
            }
            std::reverse(out.begin(), out.end());
            break;
        }
    }
    return out;
}

void append_sub_pieces(const TextPiece& piece, const std::vector<std::pair<size_t, size_t>>& ranges,
                       std::vector<TextPiece>& out) {
    for (auto [s, e] : ranges) {
        if (e <= s) continue;
        TextPiece sub;
        sub.text = piece.text.substr(s, e - s);
        sub.original_start = piece.original_start + s;
        out.push_back(std::move(sub));
    }
}

}  // namespace taco
