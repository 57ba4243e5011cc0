#include "structured/token_vocab.h"

#include <algorithm>

#include "tokenizer/byte_level.h"

namespace taco::structured {

TokenVocab::TokenVocab(std::vector<std::optional<std::string>> token_bytes, int64_t vocab_size)
    : vocab_size_(std::max<int64_t>(vocab_size, int64_t(token_bytes.size()))) {
    bytes_.resize(token_bytes.size());
    uint64_t hash = 1469598103934665603ull;  // FNV-1a over (id, bytes)
    for (size_t id = 0; id < token_bytes.size(); ++id) {
        if (!token_bytes[id] || token_bytes[id]->empty()) continue;
        bytes_[id] = std::move(*token_bytes[id]);
        sorted_.push_back(int32_t(id));
        for (char c : std::to_string(id) + ":" + bytes_[id] + ";") hash = (hash ^ uint8_t(c)) * 1099511628211ull;
    }
    fingerprint_ = hash ^ uint64_t(vocab_size_);
    std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
        return bytes_[size_t(a)] < bytes_[size_t(b)] || (bytes_[size_t(a)] == bytes_[size_t(b)] && a < b);
    });
    sorted_offsets_.push_back(0);
    for (int32_t id : sorted_) {
        sorted_text_ += bytes_[size_t(id)];
        sorted_offsets_.push_back(sorted_text_.size());
    }
    lcp_.assign(sorted_.size(), 0);
    for (size_t i = 1; i < sorted_.size(); ++i) {
        const std::string& a = bytes_[size_t(sorted_[i - 1])];
        const std::string& b = bytes_[size_t(sorted_[i])];
        size_t n = 0;
        while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
        lcp_[i] = int32_t(n);
    }
    size_t i = 0;
    for (int b = 0; b <= 256; ++b) {
        while (i < sorted_.size() && uint8_t(bytes_[size_t(sorted_[i])][0]) < b) ++i;
        first_byte_begin_[size_t(b)] = b == 256 ? sorted_.size() : i;
    }
}

namespace {

// "<0x0A>" -> byte 0x0A (SentencePiece byte fallback).
std::optional<uint8_t> byte_fallback(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return std::nullopt;
    auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : -1;
    };
    if (hex(token[3]) < 0 || hex(token[4]) < 0) return std::nullopt;
    return uint8_t(hex(token[3]) * 16 + hex(token[4]));
}

std::string replace_metaspace(const std::string& token) {
    static const std::string kMeta = "\xE2\x96\x81";  // U+2581, SentencePiece's space
    std::string out;
    for (size_t i = 0; i < token.size();) {
        if (token.compare(i, kMeta.size(), kMeta) == 0) {
            out += ' ';
            i += kMeta.size();
        } else {
            out += token[i++];
        }
    }
    return out;
}

}  // namespace

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tokenizer, int64_t vocab_size) {
    const int32_t n = tokenizer.vocab_size();
    // The vocabulary's kind, as XGrammar tells it from the tokens: byte fallback pieces ("<0x0A>") mark
    // SentencePiece; 'Ġ' (U+0120, the byte-level form of a space) marks byte-level BPE.
    const bool sentencepiece =
        tokenizer.token_to_id("<0x0A>").has_value() || tokenizer.token_to_id("<0x20>").has_value();
    bool byte_level = false;
    if (!sentencepiece)
        for (int32_t id = 0; id < n && !byte_level; ++id) {
            const auto token = tokenizer.id_to_token(id);
            byte_level = token && token->find("\xC4\xA0") != std::string::npos;
        }
    std::vector<std::optional<std::string>> bytes(static_cast<size_t>(n));
    for (int32_t id = 0; id < n; ++id) {
        const auto token = tokenizer.id_to_token(id);
        if (!token) continue;
        if (tokenizer.is_special(id)) {
            if (!token->empty()) bytes[size_t(id)] = kSpecialTokenMark + *token + kSpecialTokenMark;
            continue;
        }
        if (sentencepiece) {
            const auto b = byte_fallback(*token);
            bytes[size_t(id)] = b ? std::string(1, char(*b)) : replace_metaspace(*token);
        } else if (byte_level) {
            std::string decoded;
            // Added tokens are written as plain text, not in the byte-level alphabet.
            bytes[size_t(id)] = byte_level::decode_token(*token, decoded) ? decoded : *token;
        } else {
            bytes[size_t(id)] = replace_metaspace(*token);
        }
        // An ordinary token with the byte of special tokens' marks (byte-level BPE's byte 0xFF: never valid UTF-8,
        // so no grammar accepts it anyway) must not spell the marked form of a special token.
        if (bytes[size_t(id)] && bytes[size_t(id)]->find(kSpecialTokenMark) != std::string::npos)
            bytes[size_t(id)].reset();
    }
    return std::make_shared<const TokenVocab>(std::move(bytes), vocab_size);
}

}  // namespace taco::structured
