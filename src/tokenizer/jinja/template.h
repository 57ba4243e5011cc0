// Template: the entry point of the Jinja interpreter. parse() reports syntax errors (with line numbers) at load
// time; render() reports runtime errors (raise_exception, type errors, undefined access) as a Status. The
// environment is the one transformers renders chat templates with: trim_blocks, lstrip_blocks, loop controls,
// immutable sandbox, globals range/namespace/dict/raise_exception/strftime_now, a {% generation %} tag.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace taco::jinja {

struct RenderOptions {
    // The clock strftime_now() reads (seconds since the epoch, formatted in local time); unset = now.
    std::optional<int64_t> now_epoch_seconds;
    RenderLimits limits;
};

class Template {
public:
    static Result<Template> parse(const std::string& source);

    // context: the template's variables, e.g. {"messages", ...}; they shadow the globals.
    Result<std::string> render(const std::vector<std::pair<std::string, Value>>& context,
                               const RenderOptions& options = {}) const;

private:
    explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
    std::shared_ptr<const Body> body_;
};

}  // namespace taco::jinja
