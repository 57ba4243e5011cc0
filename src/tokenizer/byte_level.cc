#include "tokenizer/byte_level.h"

#include <unordered_map>

#include "tokenizer/unicode_utils.h"

namespace taco::byte_level {
namespace {

struct Tables {
    std::array<std::string, 256> to_char;
    std::array<std::array<char, 2>, 256> utf8;  // each mapped character is 1 or 2 UTF-8 bytes
    std::array<uint8_t, 256> utf8_len;
    std::unordered_map<int32_t, uint8_t> to_byte;
    Tables() {
        int32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            int32_t cp = printable ? b : next++;
            to_char[b] = unicode::to_utf8(cp);
            utf8_len[b] = static_cast<uint8_t>(to_char[b].size());
            utf8[b] = {to_char[b][0], to_char[b].size() > 1 ? to_char[b][1] : '\0'};
            to_byte[cp] = static_cast<uint8_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

const std::string& byte_to_char(uint8_t b) { return tables().to_char[b]; }

void encode_bytes(std::string_view text, std::string& out) {
    const auto& t = tables();
    size_t old = out.size();
    out.resize(old + text.size() * 2);
    char* dst = out.data() + old;
    for (char c : text) {
        auto b = static_cast<uint8_t>(c);
        dst[0] = t.utf8[b][0];
        dst[1] = t.utf8[b][1];
        dst += t.utf8_len[b];
    }
    out.resize(static_cast<size_t>(dst - out.data()));
}

bool decode_token(std::string_view token, std::string& out) {
    const auto& t = tables();
    size_t old_size = out.size();
    for (size_t pos = 0; pos < token.size();) {
        size_t len;
        int32_t cp = unicode::decode_utf8(token, pos, len);
        auto it = t.to_byte.find(cp);
        if (it == t.to_byte.end()) {
            out.resize(old_size);
            return false;
        }
        out.push_back(static_cast<char>(it->second));
        pos += len;
    }
    return true;
}

}  // namespace taco::byte_level
