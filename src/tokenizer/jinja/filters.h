// Jinja filters as transformers' environment has them (jinja2's built-ins with `tojson` replaced by
// json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)).
#pragma once

#include <string>

#include "core/status.h"
#include "tokenizer/jinja/value.h"

namespace taco::jinja {

bool is_known_filter(const std::string& name);
Result<Value> call_filter(const std::string& name, const Value& value, CallArgs& args, Evaluator& evaluator);

}  // namespace taco::jinja
