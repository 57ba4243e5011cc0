#include "tokenizer/tokenizer.h"

#include <cstdint>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_utils.h"

namespace taco {

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    size_t valid = unicode::valid_prefix_length(text);
    if (valid != text.size()) return error("encode: input is not valid UTF-8 at byte {}", valid);
    std::vector<TextPiece> pieces = impl_->added.extract_and_normalize(text, impl_->normalizer.get());
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    const PreTokenizer* pre = impl_->pre_tokenizer.get();
    if (pre && pre->can_stream()) {
        Status status;
        for (const auto& piece : pieces) {
            if (piece.added_id >= 0) {
                ids.push_back(piece.added_id);
                continue;
            }
            pre->stream(piece.text, piece.original_start, [&](std::string_view word) {
                if (status.is_ok()) status = impl_->model->tokenize(word, ids);
            });
        }
        TACO_RETURN_IF_ERROR(status);
    } else {
        if (pre) pre->pre_tokenize(pieces);
        for (const auto& piece : pieces) {
            if (piece.added_id >= 0) {
                ids.push_back(piece.added_id);
            } else {
                TACO_RETURN_IF_ERROR(impl_->model->tokenize(piece.text, ids));
            }
        }
    }
    if (impl_->post_processor) impl_->post_processor->process(ids, add_special_tokens);
    return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        const std::string* token = impl_->added.id_to_token(id);
        if (!token) token = impl_->model->id_to_token(id);
        if (!token) continue;
        if (skip_special_tokens && impl_->added.is_special_content(*token)) continue;
        tokens.push_back(*token);
    }
    std::string text;
    if (impl_->decoder) {
        text = impl_->decoder->decode(std::move(tokens));
    } else {
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (i) text += ' ';
            text += tokens[i];
        }
    }
    if (impl_->clean_up_tokenization_spaces) text = clean_up_tokenization(std::move(text));
    return text;
}

int32_t Tokenizer::vocab_size() const {
    int32_t n = impl_->model->vocab_size();
    for (const auto& [id, token] : impl_->added.tokens()) {
        if (!impl_->model->token_to_id(token.content)) ++n;
    }
    return n;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
    if (auto id = impl_->added.token_to_id(token)) return id;
    return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
    if (const AddedToken* t = impl_->added.find(id)) return t->content;
    if (const std::string* t = impl_->model->id_to_token(id)) return *t;
    return std::nullopt;
}

std::optional<int32_t> Tokenizer::bos_token_id() const { return impl_->bos_id; }
std::optional<int32_t> Tokenizer::eos_token_id() const { return impl_->eos_id; }

bool Tokenizer::is_special(int32_t id) const {
    const AddedToken* t = impl_->added.find(id);
    return t && t->special;
}

}  // namespace taco
