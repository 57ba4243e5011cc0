// Folders with only a SentencePiece tokenizer.model: libsentencepiece encodes each piece of text between added
// tokens; decoding uses the token strings the way the converted (Llama-style) pipeline does.
#include <sentencepiece_processor.h>

#include "tokenizer/tokenizer_impl.h"

namespace taco {
namespace {

class SentencePieceModel final : public Model {
public:
    explicit SentencePieceModel(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp) : sp_(std::move(sp)) {
        pieces_.reserve(static_cast<size_t>(sp_->GetPieceSize()));
        for (int i = 0; i < sp_->GetPieceSize(); ++i) {
            pieces_.push_back(sp_->IdToPiece(i));
            ids_.emplace(pieces_.back(), i);
        }
    }
    Status tokenize(std::string_view word, std::vector<int32_t>& out) const override {
        std::vector<int> ids;
        auto status = sp_->Encode(word, &ids);
        if (!status.ok()) return error("sentencepiece: {}", status.ToString());
        out.insert(out.end(), ids.begin(), ids.end());
        return Status::ok();
    }
    std::optional<int32_t> token_to_id(std::string_view token) const override {
        auto it = ids_.find(std::string(token));
        if (it == ids_.end()) return std::nullopt;
        return it->second;
    }
    const std::string* id_to_token(int32_t id) const override {
        if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return nullptr;
        return &pieces_[id];
    }
    int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
    const sentencepiece::SentencePieceProcessor& processor() const { return *sp_; }

private:
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
    std::vector<std::string> pieces_;
    std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer::Impl>> load_sentencepiece(const std::string& model_path) {
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    auto status = sp->Load(model_path);
    if (!status.ok()) return error("{}: cannot load SentencePiece model: {}", model_path, status.ToString());
    auto impl = std::make_unique<Tokenizer::Impl>();
    std::vector<AddedToken> specials;
    for (int i = 0; i < sp->GetPieceSize(); ++i) {
        if (!sp->IsControl(i) && !sp->IsUnknown(i)) continue;
        AddedToken t;
        t.content = sp->IdToPiece(i);
        t.id = i;
        t.special = true;
        t.normalized = false;
        specials.push_back(std::move(t));
    }
    if (sp->bos_id() >= 0) impl->bos_id = sp->bos_id();
    if (sp->eos_id() >= 0) impl->eos_id = sp->eos_id();
    impl->model = std::make_unique<SentencePieceModel>(std::move(sp));
    impl->added.add(specials, nullptr);
    TACO_ASSIGN_OR_RETURN(impl->decoder, make_decoder(nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})")));
    return impl;
}

}  // namespace taco
