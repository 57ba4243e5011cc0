// GPT-2's reversible byte <-> printable character map (bytes_to_unicode), shared by the ByteLevel
// pre-tokenizer and decoder.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace taco::byte_level {

// UTF-8 of the character standing for byte b.
const std::string& byte_to_char(uint8_t b);
// Appends the mapped form of every byte of `text`.
void encode_bytes(std::string_view text, std::string& out);
// Maps a token's characters back to bytes. Returns false (out untouched beyond its old size) if some character
// is not one of the 256 mapped characters.
bool decode_token(std::string_view token, std::string& out);

}  // namespace taco::byte_level
