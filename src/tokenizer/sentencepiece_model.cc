// Folders with only a SentencePiece tokenizer.model, converted the way transformers 5 converts them
// (SentencePieceExtractor + LlamaTokenizer): a BPE model over the pieces, merges generated from the vocabulary
// (generate_merges), byte fallback, control and unknown pieces as special added tokens. The Metaspace pipeline
// itself comes from apply_tokenizer_config (LlamaTokenizer).
#include <algorithm>

#include <sentencepiece_processor.h>

#include "tokenizer/bpe_model.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_utils.h"

namespace taco {
namespace {

bool read_varint(std::string_view s, size_t& pos, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && pos < s.size(); shift += 7) {
        auto b = static_cast<uint8_t>(s[pos++]);
        value |= static_cast<uint64_t>(b & 0x7F) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

// ModelProto.trainer_spec (field 2).model_type (field 3): 1 unigram, 2 bpe, 3 word, 4 char; 1 when absent.
int model_type(std::string_view proto) {
    size_t pos = 0;
    while (pos < proto.size()) {
        uint64_t key, len;
        if (!read_varint(proto, pos, key)) return -1;
        uint32_t field = static_cast<uint32_t>(key >> 3), wire = key & 7;
        if (wire == 0) {
            if (!read_varint(proto, pos, len)) return -1;
        } else if (wire == 2) {
            if (!read_varint(proto, pos, len) || len > proto.size() - pos) return -1;
            if (field == 2) {
                std::string_view spec = proto.substr(pos, len);
                size_t p = 0;
                while (p < spec.size()) {
                    uint64_t k, v;
                    if (!read_varint(spec, p, k)) return -1;
                    if ((k & 7) == 0) {
                        if (!read_varint(spec, p, v)) return -1;
                        if ((k >> 3) == 3) return static_cast<int>(v);
                    } else if ((k & 7) == 2) {
                        if (!read_varint(spec, p, v) || v > spec.size() - p) return -1;
                        p += v;
                    } else if ((k & 7) == 5) {
                        p += 4;
                    } else if ((k & 7) == 1) {
                        p += 8;
                    } else {
                        return -1;
                    }
                }
                return 1;
            }
            pos += len;
        } else if (wire == 5) {
            pos += 4;
        } else if (wire == 1) {
            pos += 8;
        } else {
            return -1;
        }
    }
    return 1;
}

// transformers' generate_merges(vocab) without scores: every split of a piece into two vocabulary pieces, ordered
// by the merged piece's id, then by the code-point lengths of the left and right parts.
std::vector<std::pair<std::string, std::string>> generate_merges(
    const std::vector<std::string>& pieces, const std::unordered_map<std::string, int32_t>& vocab) {
    struct Merge {
        int32_t id;
        size_t left_len, right_len;
        int32_t left_id, right_id;
        std::string left, right;
    };
    std::vector<Merge> merges;
    for (size_t id = 0; id < pieces.size(); ++id) {
        const std::string& piece = pieces[id];
        std::vector<size_t> bounds;
        for (size_t pos = 0; pos < piece.size();) {
            size_t len = unicode::valid_sequence_length(piece, pos);
            pos += len == 0 ? 1 : len;
            if (pos < piece.size()) bounds.push_back(pos);
        }
        size_t first = merges.size();
        for (size_t k = 0; k < bounds.size(); ++k) {
            std::string left = piece.substr(0, bounds[k]), right = piece.substr(bounds[k]);
            auto l = vocab.find(left), r = vocab.find(right);
            if (l == vocab.end() || r == vocab.end()) continue;
            merges.push_back({static_cast<int32_t>(id), k + 1, bounds.size() - k, l->second, r->second, left, right});
        }
        std::stable_sort(merges.begin() + static_cast<std::ptrdiff_t>(first), merges.end(),
                         [](const Merge& a, const Merge& b) {
                             return std::tie(a.left_id, a.right_id) < std::tie(b.left_id, b.right_id);
                         });
    }
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
        return std::tie(a.id, a.left_len, a.right_len) < std::tie(b.id, b.left_len, b.right_len);
    });
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.size());
    for (auto& m : merges) out.emplace_back(std::move(m.left), std::move(m.right));
    return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer::Impl>> load_sentencepiece(const std::string& model_path) {
    sentencepiece::SentencePieceProcessor sp;
    auto status = sp.Load(model_path);
    if (!status.ok()) return error("{}: cannot load SentencePiece model: {}", model_path, status.ToString());
    int type = model_type(sp.serialized_model_proto());
    if (type != 2) {
        return error("{}: SentencePiece model type {} is not supported (only BPE, type 2)", model_path, type);
    }
    std::vector<std::string> pieces;
    std::unordered_map<std::string, int32_t> vocab;
    std::vector<AddedToken> specials;
    for (int i = 0; i < sp.GetPieceSize(); ++i) {
        pieces.push_back(sp.IdToPiece(i));
        vocab.emplace(pieces.back(), i);
        if (sp.IsControl(i) || sp.IsUnknown(i)) {
            AddedToken t;
            t.content = pieces.back();
            t.id = i;
            t.special = true;
            t.normalized = false;
            specials.push_back(std::move(t));
        }
    }
    auto merges = generate_merges(pieces, vocab);
    BpeOptions options;
    options.fuse_unk = true;
    options.byte_fallback = true;
    std::vector<std::pair<std::string, int32_t>> vocab_list(vocab.begin(), vocab.end());
    auto model = BpeModel::create(std::move(vocab_list), merges, options);
    if (!model) return model.status().with_context(model_path);

    auto impl = std::make_unique<Tokenizer::Impl>();
    impl->model = std::move(model).value();
    impl->added.add(specials, nullptr);
    if (sp.bos_id() >= 0) impl->bos_id = sp.bos_id();
    if (sp.eos_id() >= 0) impl->eos_id = sp.eos_id();
    // LlamaTokenizer's pipeline with its defaults; tokenizer_config.json may refine it (legacy, add_prefix_space).
    impl->pre_tokenizer = make_metaspace_pre_tokenizer("\xE2\x96\x81", PrependScheme::kFirst, false);
    TACO_ASSIGN_OR_RETURN(impl->decoder, make_decoder(nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})")));
    return impl;
}

}  // namespace taco
