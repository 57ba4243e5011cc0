// UTF-8 and Unicode helpers for the tokenizer: decoding, validation, the lossy conversion Rust's
// String::from_utf8_lossy performs (Hugging Face decoders rely on it), and character classes with the
// meaning Rust's char methods give them (the tokenizers library is written against those).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace taco::unicode {

// Decodes the code point starting at s[pos]; sets `len` to its byte length. Returns -1 (len 1) on an invalid
// or truncated sequence. Overlong forms, surrogates and values past U+10FFFF are invalid.
int32_t decode_utf8(std::string_view s, size_t pos, size_t& len);
// Byte length of the valid sequence starting at s[pos], or 0 if it is not valid.
size_t valid_sequence_length(std::string_view s, size_t pos);
bool is_valid_utf8(std::string_view s);
// Byte length of the leading part of `s` that is valid UTF-8.
size_t valid_prefix_length(std::string_view s);
void append_utf8(std::string& out, int32_t code_point);
std::string to_utf8(int32_t code_point);
// Replaces each maximal invalid subpart with U+FFFD, as Rust's String::from_utf8_lossy and Python's
// bytes.decode(errors="replace") do.
std::string lossy_utf8(std::string_view bytes);
size_t count_chars(std::string_view s);

// Rust char::is_whitespace (the White_Space property).
bool is_whitespace(int32_t cp);
// Rust regex's \w: alphabetic, marks, decimal digits, connector punctuation, join controls.
bool is_word_char(int32_t cp);
bool is_alphanumeric(int32_t cp);  // Rust char::is_alphanumeric (Alphabetic or Numeric)
bool is_punctuation(int32_t cp);   // Unicode general category P*
bool is_ascii_punctuation(int32_t cp);
bool is_digit(int32_t cp);    // Rust char::is_numeric: general category N*
bool is_control(int32_t cp);  // general category Cc/Cf/Cn/Co (BertNormalizer's notion, minus \t\n\r)
bool is_mark_nonspacing(int32_t cp);
bool is_cjk(int32_t cp);

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
std::string normalize(std::string_view s, NormalForm form);
// Per-character lowercase as tokenizers' Lowercase normalizer does (no final-sigma context; U+0130 -> "i\u0307").
std::string to_lower(std::string_view s);

}  // namespace taco::unicode
