// integer_range_regex (json_schema_grammar.h): decimal ranges as regexes, digit by digit.
#include <fmt/format.h>

#include <vector>

#include "structured/json_schema_grammar.h"

namespace taco::structured {
namespace {

// Numbers written with exactly x.size() digits between x and y (same length, x <= y).
std::string same_length(const std::string& x, const std::string& y) {
    const size_t n = x.size();
    if (n == 0) return "";
    if (n == 1) return x[0] == y[0] ? std::string(1, x[0]) : fmt::format("[{}-{}]", x[0], y[0]);
    // Grouped: the rest may be alternatives, and the shared digit leads each of them.
    if (x[0] == y[0]) return fmt::format("{}({})", x[0], same_length(x.substr(1), y.substr(1)));
    const std::string x_rest = x.substr(1), y_rest = y.substr(1);
    const std::string zeros(n - 1, '0'), nines(n - 1, '9');
    const std::string any = fmt::format("[0-9]{{{}}}", n - 1);
    if (x_rest == zeros && y_rest == nines) return fmt::format("[{}-{}]{}", x[0], y[0], any);
    std::vector<std::string> parts;
    char lo = x[0], hi = y[0];
    if (x_rest == zeros) {
        parts.push_back(fmt::format("{}{}", x[0], any));
    } else {
        parts.push_back(fmt::format("{}({})", x[0], same_length(x_rest, nines)));
    }
    ++lo;
    if (y_rest == nines) {
        parts.push_back(fmt::format("{}{}", y[0], any));
    } else {
        parts.push_back(fmt::format("{}({})", y[0], same_length(zeros, y_rest)));
    }
    --hi;
    if (lo <= hi) parts.push_back(lo == hi ? fmt::format("{}{}", lo, any) : fmt::format("[{}-{}]{}", lo, hi, any));
    std::string out;
    for (const std::string& p : parts) {
        if (!out.empty()) out.push_back('|');
        out.append(p);
    }
    return out;
}

int64_t pow10(int digits) {
    int64_t p = 1;
    for (int i = 0; i < digits; ++i) p *= 10;
    return p;
}

int num_digits(int64_t v) { return int(std::to_string(v).size()); }

// Non-negative integers in [a, b] (b absent: unbounded), as alternatives.
void non_negative(int64_t a, std::optional<int64_t> b, std::vector<std::string>& out) {
    if (b && *b < a) return;
    const int last = b ? num_digits(*b) : num_digits(a);
    for (int len = num_digits(a); len <= last; ++len) {
        const int64_t lo = std::max(a, len == 1 ? 0 : pow10(len - 1));
        const int64_t hi = len >= 19 ? (b ? *b : INT64_MAX) : std::min(b ? *b : INT64_MAX, pow10(len) - 1);
        if (lo > hi) continue;
        out.push_back(same_length(std::to_string(lo), std::to_string(hi)));
    }
    if (!b) out.push_back(fmt::format("[1-9][0-9]{{{},}}", last));  // longer than any number above
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) {
        out.append(out.empty() ? "(" : "|(").append(p).push_back(')');
    }
    return out;
}

}  // namespace

std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    std::vector<std::string> positive, negative;
    // Non-negative part: [max(lo, 0), hi].
    if (!hi || *hi >= 0) non_negative(lo ? std::max<int64_t>(*lo, 0) : 0, hi, positive);
    // Negative part: -n for n in [max(1, -hi), -lo].
    if (!lo || *lo < 0) {
        const int64_t from = hi ? std::max<int64_t>(1, -*hi) : 1;
        std::optional<int64_t> to;
        if (lo) to = -*lo;
        non_negative(from, to, negative);
    }
    std::string out;
    if (!positive.empty()) out = join(positive);
    if (!negative.empty()) {
        if (!out.empty()) out.push_back('|');
        out.append("-(").append(join(negative)).push_back(')');
    }
    return out;
}

}  // namespace taco::structured
