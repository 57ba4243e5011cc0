// UTF-8 helpers that give Jinja strings Python's code-point semantics: len(), indexing and slicing count code
// points, str.strip() strips Unicode whitespace, upper()/lower() map each code point. Invalid UTF-8 bytes are
// treated as one code point each (never read out of bounds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taco::jinja {

// Decodes the code point starting at s[pos]; *length receives its byte length (>= 1).
char32_t decode_utf8(std::string_view s, size_t pos, size_t* length);
void append_utf8(char32_t cp, std::string& out);
std::vector<char32_t> to_code_points(std::string_view s);
std::string from_code_points(const std::vector<char32_t>& cps);
size_t code_point_count(std::string_view s);

bool is_python_space(char32_t cp);      // str.isspace()
bool is_python_printable(char32_t cp);  // str.isprintable()
bool is_python_alnum(char32_t cp);      // str.isalnum() (letters and digits)
bool is_python_alpha(char32_t cp);
bool is_python_digit(char32_t cp);
bool is_python_lower(char32_t cp);    // cased lowercase letter
bool is_python_upper(char32_t cp);    // uppercase letter (Lu)
bool category_is_title(char32_t cp);  // titlecase letter (Lt)
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);

std::string str_upper(std::string_view s);
std::string str_lower(std::string_view s);
std::string str_capitalize(std::string_view s);  // Python str.capitalize()
std::string str_title(std::string_view s);       // Python str.title()
std::string str_swapcase(std::string_view s);

// Python str.strip([chars]) family; chars == nullptr strips whitespace.
std::string str_strip(std::string_view s, const std::string* chars, bool left, bool right);

// Python str.splitlines() (without keepends).
std::vector<std::string> str_splitlines(std::string_view s);

}  // namespace taco::jinja
