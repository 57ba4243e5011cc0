#include "tokenizer/unigram_model.h"

#include <limits>

#include <fmt/format.h>

#include "core/json_util.h"
#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {
constexpr double kUnkPenalty = 10.0;
}  // namespace

Result<std::unique_ptr<UnigramModel>> UnigramModel::from_json(const nlohmann::json& j) {
    if (!j.contains("vocab") || !j["vocab"].is_array())
        return error("model Unigram: \"vocab\" must be a list of [piece, score]");
    std::unique_ptr<UnigramModel> m(new UnigramModel());
    m->min_score_ = std::numeric_limits<double>::infinity();
    m->ids_.reserve(j["vocab"].size());
    for (const auto& entry : j["vocab"]) {
        if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
            return error("model Unigram: bad vocab entry {}", json_excerpt(entry));
        }
        auto id = static_cast<int32_t>(m->pieces_.size());
        m->pieces_.push_back(entry[0].get<std::string>());
        m->scores_.push_back(entry[1].get<double>());
        m->ids_.insert(m->pieces_.back(), id);  // a repeated piece keeps its last id, as in tokenizers
        m->min_score_ = std::min(m->min_score_, m->scores_.back());
        m->max_piece_bytes_ = std::max(m->max_piece_bytes_, m->pieces_.back().size());
    }
    if (j.contains("unk_id") && j["unk_id"].is_number_integer()) {
        auto unk = j["unk_id"].get<int64_t>();
        if (unk < 0 || unk >= static_cast<int64_t>(m->pieces_.size()))
            return error("model Unigram: unk_id {} is not in the vocab", unk);
        m->unk_id_ = static_cast<int32_t>(unk);
    }
    m->byte_fallback_ = j.value("byte_fallback", false);
    return m;
}

const std::string* UnigramModel::id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return nullptr;
    return &pieces_[id];
}

Status UnigramModel::tokenize(std::string_view s, std::vector<int32_t>& out) const {
    struct Node {
        int32_t id = -1;
        double score = 0;
        int64_t starts_at = -1;  // -1: not reached yet
    };
    std::vector<Node> best(s.size() + 1);
    double unk_score = min_score_ - kUnkPenalty;
    for (size_t start = 0; start < s.size();) {
        size_t char_len = unicode::valid_sequence_length(s, start);
        if (char_len == 0) char_len = 1;
        double base = best[start].score;
        bool has_single = false;
        // Pieces starting here, shortest first (the order of tokenizers' trie walk; ties keep the first).
        for (size_t end = start + char_len; end <= s.size() && end - start <= max_piece_bytes_;) {
            if (auto id = ids_.find(s.substr(start, end - start))) {
                double candidate = scores_[*id] + base;
                Node& node = best[end];
                if (node.starts_at < 0 || candidate > node.score) node = {*id, candidate, static_cast<int64_t>(start)};
                if (end - start == char_len) has_single = true;
            }
            if (end == s.size()) break;
            size_t next = unicode::valid_sequence_length(s, end);
            end += next == 0 ? 1 : next;
        }
        if (!has_single) {
            if (!unk_id_)
                return error("Unigram: no piece for '{}' and no unk_id", std::string(s.substr(start, char_len)));
            Node& node = best[start + char_len];
            double candidate = unk_score + base;
            if (node.starts_at < 0 || candidate > node.score) node = {*unk_id_, candidate, static_cast<int64_t>(start)};
        }
        start += char_len;
    }
    // Walk back, fusing runs of unk pieces into one string.
    std::vector<std::string_view> pieces;
    size_t end = s.size();
    size_t unk_run_start = std::string_view::npos, unk_run_end = 0;
    while (end > 0) {
        const Node& node = best[end];
        auto start = static_cast<size_t>(node.starts_at);
        if (unk_id_ && node.id == *unk_id_) {
            if (unk_run_start == std::string_view::npos) unk_run_end = end;
            unk_run_start = start;
        } else {
            if (unk_run_start != std::string_view::npos)
                pieces.push_back(s.substr(unk_run_start, unk_run_end - unk_run_start));
            unk_run_start = std::string_view::npos;
            pieces.push_back(s.substr(start, end - start));
        }
        end = start;
    }
    if (unk_run_start != std::string_view::npos) pieces.push_back(s.substr(unk_run_start, unk_run_end - unk_run_start));
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (auto id = ids_.find(*it)) {
            out.push_back(*id);
            continue;
        }
        if (byte_fallback_) {
            std::vector<int32_t> bytes;
            for (char c : *it) {
                auto id = ids_.find(fmt::format("<0x{:02X}>", static_cast<uint8_t>(c)));
                if (!id) break;
                bytes.push_back(*id);
            }
            if (bytes.size() == it->size()) {
                out.insert(out.end(), bytes.begin(), bytes.end());
                continue;
            }
        }
        if (!unk_id_) return error("Unigram: no unk_id for '{}'", std::string(*it));
        out.push_back(*unk_id_);
    }
    return Status::ok();
}

}  // namespace taco
