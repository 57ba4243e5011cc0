// Jinja tests (`x is defined`, `x is divisibleby 3`, ...), with jinja2's definitions of each type test.
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/jinja/value.h"

namespace taco::jinja {

bool is_known_test(const std::string& name);
Result<bool> call_test(const std::string& name, const Value& value, CallArgs& args, Evaluator& evaluator);

}  // namespace taco::jinja
