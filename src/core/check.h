// Invariant checks: a failed check is a bug in taco-llm, never bad user input (that is a Status). It prints
// the expression, both values and the place, then aborts. Always on, also in Release builds.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/core.h>  // fmt::format of built-in types; files that need more include fmt/format.h

namespace taco::detail {

[[noreturn]] inline void check_failed(const char* file, int line, const std::string& what) {
    std::fprintf(stderr, "taco-llm: check failed at %s:%d: %s\n", file, line, what.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace taco::detail

#define TACO_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) ::taco::detail::check_failed(__FILE__, __LINE__, #cond); \
    } while (0)

#define TACO_CHECK_MSG(cond, ...)                                                                                   \
    do {                                                                                                            \
        if (!(cond))                                                                                                \
            ::taco::detail::check_failed(__FILE__, __LINE__, std::string(#cond) + ": " + fmt::format(__VA_ARGS__)); \
    } while (0)

#define TACO_CHECK_OP(a, b, op)                                                                              \
    do {                                                                                                     \
        const auto& taco_a_ = (a);                                                                           \
        const auto& taco_b_ = (b);                                                                           \
        if (!(taco_a_ op taco_b_))                                                                           \
            ::taco::detail::check_failed(__FILE__, __LINE__,                                                 \
                                         fmt::format("{} {} {} ({} vs {})", #a, #op, #b, taco_a_, taco_b_)); \
    } while (0)

#define TACO_CHECK_EQ(a, b) TACO_CHECK_OP(a, b, ==)
#define TACO_CHECK_NE(a, b) TACO_CHECK_OP(a, b, !=)
#define TACO_CHECK_LT(a, b) TACO_CHECK_OP(a, b, <)
#define TACO_CHECK_LE(a, b) TACO_CHECK_OP(a, b, <=)
#define TACO_CHECK_GT(a, b) TACO_CHECK_OP(a, b, >)
#define TACO_CHECK_GE(a, b) TACO_CHECK_OP(a, b, >=)
