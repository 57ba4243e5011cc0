#include "tokenizer/bpe_model.h"

#include <atomic>
#include <cstring>
#include <queue>
#include <thread>

#include <fmt/format.h>

#include "core/json_util.h"
#include "core/limits.h"
#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {

struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t len;  // 0 once merged into its left neighbour
};

struct MergeCandidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const MergeCandidate& o) const {  // priority_queue pops the largest: invert
        if (rank != o.rank) return rank > o.rank;
        return pos > o.pos;
    }
};

// Direct-mapped per-thread cache of short words -> ids: one cache line per entry, probed before any hashing of
// the vocabulary. Entries name the model they belong to, so models never see each other's words.
struct WordCacheEntry {
    uint64_t hash = 0;
    uint32_t model = 0;  // 0: empty
    uint8_t len = 0;
    uint8_t num_ids = 0;
    char bytes[22];
    int32_t ids[7];
};
static_assert(sizeof(WordCacheEntry) <= 64);
constexpr size_t kWordCacheEntries = 4096;

WordCacheEntry* word_cache() {
    thread_local std::unique_ptr<WordCacheEntry[]> cache(new WordCacheEntry[kWordCacheEntries]);
    return cache.get();
}

std::atomic<uint32_t> next_instance_id{1};

uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

std::optional<std::string> optional_string(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::create(std::vector<std::pair<std::string, int32_t>> vocab,
                                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                                   BpeOptions options) {
    std::unique_ptr<BpeModel> m(new BpeModel());
    m->instance_id_ = next_instance_id.fetch_add(1);
    m->options_ = std::move(options);
    int32_t max_id = -1;
    for (const auto& [token, id] : vocab) {
        if (id < 0) return error("BPE vocab: token '{}' has negative id {}", token, id);
        // The id table is dense (max id + 1 entries): an id past the limit would allocate gigabytes.
        if (id > limits::kMaxTokenId)
            return error("BPE vocab: token '{}' has id {}, past the limit of {} (limits::kMaxTokenId)", token, id,
                         limits::kMaxTokenId);
        max_id = std::max(max_id, id);
    }
    m->id_to_token_.resize(static_cast<size_t>(max_id + 1));
    m->has_id_.assign(static_cast<size_t>(max_id + 1), false);
    m->vocab_.reserve(vocab.size());
    for (auto& [token, id] : vocab) {
        m->vocab_.insert(token, id);
        m->id_to_token_[id] = std::move(token);
        m->has_id_[id] = true;
    }
    size_t prefix_len = m->options_.continuing_subword_prefix ? m->options_.continuing_subword_prefix->size() : 0;
    // Resolving merges to ids is ~3 vocabulary probes each (hundreds of thousands of merges): split over a few
    // threads, then inserted in rank order (a repeated pair keeps its last rank, as in tokenizers).
    std::vector<std::pair<uint64_t, MergeMap::Value>> resolved(merges.size());
    size_t num_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    if (merges.size() < 20000) num_threads = 1;
    std::vector<Status> errors(num_threads);
    auto resolve = [&](size_t t) {
        std::string merged;
        size_t lo = merges.size() * t / num_threads, hi = merges.size() * (t + 1) / num_threads;
        for (size_t rank = lo; rank < hi; ++rank) {
            const auto& [a, b] = merges[rank];
            auto ia = m->vocab_.find(a);
            auto ib = m->vocab_.find(b);
            if (!ia || !ib) {
                errors[t] = error("BPE merge {} ('{} {}'): '{}' is not in the vocab", rank, a, b, !ia ? a : b);
                return;
            }
            if (b.size() < prefix_len) {
                errors[t] = error("BPE merge {} ('{} {}'): shorter than the subword prefix", rank, a, b);
                return;
            }
            merged.assign(a);
            merged.append(b, prefix_len);
            auto in = m->vocab_.find(merged);
            if (!in) {
                errors[t] = error("BPE merge {} ('{} {}'): merged token '{}' is not in the vocab", rank, a, b, merged);
                return;
            }
            resolved[rank] = {pair_key(*ia, *ib), {static_cast<uint32_t>(rank), *in}};
        }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < num_threads; ++t) threads.emplace_back(resolve, t);
    resolve(0);
    for (auto& th : threads) th.join();
    for (const auto& e : errors) TACO_RETURN_IF_ERROR(e);  // lowest rank first: chunks are in rank order
    m->merges_.reserve(merges.size());
    for (const auto& [key, value] : resolved) m->merges_.insert(key, value);
    for (int b = 0; b < 256; ++b) {
        m->byte_tokens_[b] = m->vocab_.find(fmt::format("<0x{:02X}>", b)).value_or(-1);
    }
    if (m->options_.unk_token) {
        m->unk_id_ = m->vocab_.find(*m->options_.unk_token);
    }
    return m;
}

Result<std::unique_ptr<BpeModel>> BpeModel::from_json(
    const nlohmann::json& j, std::vector<std::pair<std::string, int32_t>>* scanned_vocab,
    std::vector<std::pair<std::string, std::string>>* scanned_merges) {
    std::vector<std::pair<std::string, int32_t>> vocab;
    if (scanned_vocab) {
        vocab = std::move(*scanned_vocab);
    } else {
        if (!j.contains("vocab") || !j["vocab"].is_object()) return error("model BPE: \"vocab\" must be an object");
        vocab.reserve(j["vocab"].size());
        for (const auto& [token, id] : j["vocab"].items()) {
            if (!id.is_number_integer()) return error("model BPE: vocab entry '{}' has a non-integer id", token);
            vocab.emplace_back(token, id.get<int32_t>());
        }
    }
    std::vector<std::pair<std::string, std::string>> merges;
    if (scanned_merges) {
        merges = std::move(*scanned_merges);
    } else if (j.contains("merges")) {
        if (!j["merges"].is_array()) return error("model BPE: \"merges\" must be an array");
        merges.reserve(j["merges"].size());
        for (const auto& m : j["merges"]) {
            if (m.is_string()) {
                const auto& s = m.get_ref<const std::string&>();
                size_t space = s.find(' ');
                if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
                    return error("model BPE: merge '{}' is not two tokens separated by one space", s);
                }
                merges.emplace_back(s.substr(0, space), s.substr(space + 1));
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
            } else {
                return error("model BPE: bad merge entry {}", json_excerpt(m));
            }
        }
    }
    BpeOptions options;
    options.unk_token = optional_string(j, "unk_token");
    options.continuing_subword_prefix = optional_string(j, "continuing_subword_prefix");
    options.end_of_word_suffix = optional_string(j, "end_of_word_suffix");
    options.fuse_unk = j.value("fuse_unk", false);
    options.byte_fallback = j.value("byte_fallback", false);
    options.ignore_merges = j.value("ignore_merges", false);
    return create(std::move(vocab), merges, std::move(options));
}

void BpeModel::set_word_options(const BpeOptions& options) {
    options_.unk_token = options.unk_token;
    options_.fuse_unk = options.fuse_unk;
    options_.byte_fallback = options.byte_fallback;
    options_.ignore_merges = options.ignore_merges;
    unk_id_.reset();
    if (options_.unk_token) {
        unk_id_ = vocab_.find(*options_.unk_token);
    }
    instance_id_ = next_instance_id.fetch_add(1);  // entries cached under the old options are never seen again
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_.clear();
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const { return vocab_.find(token); }

const std::string* BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
    return &id_to_token_[id];
}

Status BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty()) return Status::ok();
    WordCacheEntry* entry = nullptr;
    uint64_t hash = 0;
    if (word.size() <= sizeof(entry->bytes)) {
        hash = hash_bytes(word);
        entry = &word_cache()[hash & (kWordCacheEntries - 1)];
        if (entry->model == instance_id_ && entry->hash == hash && entry->len == word.size() &&
            std::memcmp(entry->bytes, word.data(), word.size()) == 0) {
            out.insert(out.end(), entry->ids, entry->ids + entry->num_ids);
            return Status::ok();
        }
    }
    size_t first = out.size();
    TACO_RETURN_IF_ERROR(tokenize_uncached(word, out));
    size_t n = out.size() - first;
    if (entry && n <= std::size(entry->ids)) {
        entry->model = instance_id_;
        entry->hash = hash;
        entry->len = static_cast<uint8_t>(word.size());
        std::memcpy(entry->bytes, word.data(), word.size());
        entry->num_ids = static_cast<uint8_t>(n);
        std::copy(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), entry->ids);
    }
    return Status::ok();
}

Status BpeModel::tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const {
    if (options_.ignore_merges) {
        if (auto id = vocab_.find(word)) {
            out.push_back(*id);
            return Status::ok();
        }
    }
    bool cacheable = word.size() < kMaxCachedWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto it = cache_.find(word);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return Status::ok();
        }
    }
    size_t first = out.size();
    TACO_RETURN_IF_ERROR(merge_word(word, out));
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() < kCacheCapacity)
            cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
    }
    return Status::ok();
}

Status BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    auto add = [&](int32_t id, uint32_t len) {
        auto index = static_cast<int32_t>(symbols.size());
        if (index > 0) symbols.back().next = index;
        symbols.push_back({id, index - 1, -1, len});
    };
    int32_t unk_id = -1;  // pending unknown: id (-1: none) and byte length
    uint32_t unk_len = 0;
    std::string piece;
    for (size_t pos = 0; pos < word.size();) {
        size_t len = unicode::valid_sequence_length(word, pos);
        if (len == 0) len = 1;
        bool is_first = pos == 0, is_last = pos + len == word.size();
        piece.clear();
        if (!is_first && options_.continuing_subword_prefix) piece.append(*options_.continuing_subword_prefix);
        piece.append(word.substr(pos, len));
        if (is_last && options_.end_of_word_suffix) piece.append(*options_.end_of_word_suffix);
        pos += len;

        if (auto id = vocab_.find(piece)) {
            if (unk_id >= 0) {
                add(unk_id, unk_len);
                unk_id = -1;
            }
            add(*id, static_cast<uint32_t>(len));
            continue;
        }
        if (options_.byte_fallback) {
            bool all = true;
            for (char c : piece) all = all && byte_tokens_[static_cast<uint8_t>(c)] >= 0;
            if (all) {
                for (char c : piece) add(byte_tokens_[static_cast<uint8_t>(c)], 1);
                continue;
            }
        }
        if (options_.unk_token) {
            if (!unk_id_) return error("BPE: unk token '{}' is not in the vocab", *options_.unk_token);
            if (unk_id >= 0 && options_.fuse_unk) {
                unk_len += static_cast<uint32_t>(len);
            } else {
                if (unk_id >= 0) add(unk_id, unk_len);
                unk_id = *unk_id_;
                unk_len = static_cast<uint32_t>(len);
            }
        }
    }
    if (unk_id >= 0) add(unk_id, unk_len);

    std::priority_queue<MergeCandidate> queue;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        if (auto m = merges_.find(pair_key(symbols[i].id, symbols[i + 1].id))) {
            queue.push({m->rank, static_cast<int32_t>(i), m->new_id});
        }
    }
    while (!queue.empty()) {
        MergeCandidate top = queue.top();
        queue.pop();
        Symbol& cur = symbols[top.pos];
        if (cur.len == 0 || cur.next == -1) continue;
        Symbol right = symbols[cur.next];
        auto m = merges_.find(pair_key(cur.id, right.id));
        if (!m || m->new_id != top.new_id) continue;  // stale entry
        int32_t right_pos = cur.next;
        cur.id = top.new_id;
        cur.len += right.len;
        cur.next = right.next;
        symbols[right_pos].len = 0;
        if (right.next >= 0) symbols[right.next].prev = top.pos;
        if (cur.prev >= 0) {
            if (auto p = merges_.find(pair_key(symbols[cur.prev].id, cur.id)))
                queue.push({p->rank, cur.prev, p->new_id});
        }
        if (cur.next >= 0) {
            if (auto n = merges_.find(pair_key(cur.id, symbols[cur.next].id)))
                queue.push({n->rank, top.pos, n->new_id});
        }
    }
    for (const auto& s : symbols) {
        if (s.len != 0) out.push_back(s.id);
    }
    return Status::ok();
}

}  // namespace taco
