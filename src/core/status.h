// Status and Result<T>: how bad input (files, configs, requests) is reported. A Status carries a message a
// user can act on ("model.safetensors: tensor 'x': offsets [0, 12) past end of data (8 bytes)"). Broken
// invariants are not Statuses; they abort through TACO_CHECK (check.h). Both types are [[nodiscard]]: a Status
// nobody looks at is an error nobody reports.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/core.h>  // fmt::format of built-in types; files that need more include fmt/format.h

#include "core/check.h"

namespace taco {

class [[nodiscard]] Status {
public:
    Status() = default;  // ok
    static Status ok() { return Status(); }
    static Status error(std::string message) { return Status(std::move(message), true); }

    bool is_ok() const { return !failed_; }
    explicit operator bool() const { return is_ok(); }
    const std::string& message() const { return message_; }

    // Prefixes context: Status::error("bad dtype").with_context("model.safetensors") -> "model.safetensors: bad dtype".
    Status with_context(const std::string& context) const {
        if (is_ok()) return *this;
        return Status(context + ": " + message_, true);
    }

private:
    Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
    std::string message_;
    bool failed_ = false;
};

template <class... Args>
Status error(fmt::format_string<Args...> format, Args&&... args) {
    return Status::error(fmt::format(format, std::forward<Args>(args)...));
}

// A value or the Status saying why there is none. value(), * and -> on an error abort with its message.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
    Result(Status status) : status_(std::move(status)) {
        if (status_.is_ok()) status_ = Status::error("internal: Result built from an ok Status without a value");
    }

    bool is_ok() const { return value_.has_value(); }
    explicit operator bool() const { return is_ok(); }
    const Status& status() const { return status_; }
    T& value() & {
        check_has_value();
        return *value_;
    }
    const T& value() const& {
        check_has_value();
        return *value_;
    }
    T&& value() && {
        check_has_value();
        return std::move(*value_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    void check_has_value() const {
        TACO_CHECK_MSG(value_.has_value(), "Result holds an error, not a value: {}", status_.message());
    }

    std::optional<T> value_;
    Status status_;
};

}  // namespace taco

#define TACO_CONCAT_INNER(a, b) a##b
#define TACO_CONCAT(a, b) TACO_CONCAT_INNER(a, b)

#define TACO_RETURN_IF_ERROR(expr)                      \
    do {                                                \
        ::taco::Status taco_status_ = (expr);           \
        if (!taco_status_.is_ok()) return taco_status_; \
    } while (0)

#define TACO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                             \
    if (!tmp.is_ok()) return tmp.status();         \
    lhs = std::move(tmp).value()

// TACO_ASSIGN_OR_RETURN(auto config, ModelConfig::load(dir));
#define TACO_ASSIGN_OR_RETURN(lhs, expr) TACO_ASSIGN_OR_RETURN_IMPL(TACO_CONCAT(taco_result_, __LINE__), lhs, expr)
