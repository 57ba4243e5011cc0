// core/json_util: the nesting check, both parsers (the ordered one is our own SAX builder) and error excerpts, and
// the server's request-body parser (server/request_json.h, which names the field of a number overflow), on arbitrary
// bytes. Nothing may crash, and the three parsers must agree on what is valid and on the value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/json_util.h"
#include "server/request_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)taco::check_json_depth(text);
    auto plain = taco::parse_json(text);
    auto ordered = taco::parse_ordered_json(text);
    TACO_CHECK_EQ(plain.is_ok(), ordered.is_ok());
    taco::server::ApiError error;
    auto request = taco::server::parse_request_json(std::string(text), error);
    TACO_CHECK_EQ(plain.is_ok(), request.has_value());
    if (request) TACO_CHECK(*request == *plain);
    if (plain.is_ok()) {
        TACO_CHECK(*plain == nlohmann::json(*ordered));
        (void)taco::json_excerpt(*plain);
        (void)taco::json_excerpt(*ordered, 16);
    }
    return 0;
}
