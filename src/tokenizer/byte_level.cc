#include "tokenizer/byte_level.h"

#include <unordered_map>

#include "tokenizer/unicode_utils.h"

namespace taco::byte_level {
namespace {

struct Tables {
    std::array<std::string, 256> to_char;
    std::unordered_map<int32_t, uint8_t> to_byte;
    Tables() {
        int32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            int32_t cp = printable ? b : next++;
            to_char[b] = unicode::to_utf8(cp);
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
    for (char c : text) out.append(t.to_char[static_cast<uint8_t>(c)]);
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
