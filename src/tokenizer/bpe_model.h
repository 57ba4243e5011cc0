// Byte-pair encoding as the tokenizers library runs it: characters (with continuing_subword_prefix /
// end_of_word_suffix, byte_fallback to <0xXX> tokens, unk fusing) merged lowest rank first, leftmost among
// equal ranks. Frequent short words hit a small per-thread cache (no locking); others a shared cache of words up
// to kMaxCachedWordBytes.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/flat_maps.h"
#include "tokenizer/model.h"

namespace taco {

struct BpeOptions {
    std::optional<std::string> unk_token;
    std::optional<std::string> continuing_subword_prefix;
    std::optional<std::string> end_of_word_suffix;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
};

class BpeModel final : public Model {
public:
    static constexpr size_t kMaxCachedWordBytes = 256;
    static constexpr size_t kCacheCapacity = 10000;

    // `vocab`: token -> id; `merges`: pairs in rank order. Errors name a merge whose parts are not in the vocab.
    static Result<std::unique_ptr<BpeModel>> create(std::vector<std::pair<std::string, int32_t>> vocab,
                                                    const std::vector<std::pair<std::string, std::string>>& merges,
                                                    BpeOptions options);
    // From a tokenizer.json "model" object of type BPE; vocab and merges from `j` unless given (json_scan.h).
    static Result<std::unique_ptr<BpeModel>> from_json(
        const nlohmann::json& j, std::vector<std::pair<std::string, int32_t>>* vocab = nullptr,
        std::vector<std::pair<std::string, std::string>>* merges = nullptr);

    // Changes the word-level options (unk, fusing, byte fallback, ignore_merges); prefix and suffix stay as built.
    void set_word_options(const BpeOptions& options);
    const BpeOptions& options() const { return options_; }

    Status tokenize(std::string_view word, std::vector<int32_t>& out) const override;
    std::optional<int32_t> token_to_id(std::string_view token) const override;
    const std::string* id_to_token(int32_t id) const override;
    int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.size()); }

private:
    BpeModel() = default;
    Status tokenize_uncached(std::string_view word, std::vector<int32_t>& out) const;
    Status merge_word(std::string_view word, std::vector<int32_t>& out) const;

    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
    };
    StringIdMap vocab_;
    std::vector<std::string> id_to_token_;  // indexed by id; empty where no token has that id
    std::vector<bool> has_id_;
    MergeMap merges_;                       // (left << 32 | right) -> (rank, new id)
    std::array<int32_t, 256> byte_tokens_;  // id of "<0xXX>" or -1
    BpeOptions options_;
    std::optional<int32_t> unk_id_;
    uint32_t instance_id_ = 0;  // tags this model's entries in the per-thread word cache

    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace taco
