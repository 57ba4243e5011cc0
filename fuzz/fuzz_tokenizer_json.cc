// tokenizer.json loading (the fast scanner for vocab/merges, then every component's from_json) and, when it loads,
// a round of encode/decode: an input is the tokenizer.json text, then a NUL byte and a tokenizer_config.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const size_t nul = input.find('\0');
    const std::string config = nul == std::string::npos ? "" : input.substr(nul + 1);
    auto tokenizer = taco::Tokenizer::from_json_text(input.substr(0, nul), config);
    if (!tokenizer.is_ok()) return 0;
    auto ids = (*tokenizer)->encode("Hello, world! 12 \xc3\xa9t\xc3\xa9 <s>");
    if (ids.is_ok()) {
        ids->push_back(0);
        ids->push_back(INT32_MAX);
        ids->push_back(-1);
        (void)(*tokenizer)->decode(*ids);
        (void)(*tokenizer)->decode(*ids, true);
    }
    return 0;
}
