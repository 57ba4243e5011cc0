// Python methods callable on values inside templates: str methods (`content.startswith('x')`,
// `s.split('</think>')`), dict methods (items/keys/values/get) and list methods (index/count). Mutating list and
// dict methods are refused as transformers' ImmutableSandboxedEnvironment refuses them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/jinja/value.h"

namespace taco::jinja {

bool is_string_method(const std::string& name);
Result<Value> call_string_method(const std::string& s, const std::string& name, CallArgs& args);

bool is_dict_method(const std::string& name);
Result<Value> call_dict_method(const Value& dict, const std::string& name, CallArgs& args);
bool is_list_method(const std::string& name);
Result<Value> call_list_method(const Value& list, const std::string& name, CallArgs& args);
// Names of methods that mutate a list or dict: accessing them yields the sandbox's "unsafe" undefined.
bool is_unsafe_method(const Value& object, const std::string& name);

// Python "fmt % args" (printf-style) and str.format, for the common conversions (%s %r %d %i %f %x %%, {} {0}
// {name}).
Result<std::string> percent_format(const std::string& fmt, const Value& args);
Result<std::string> brace_format(const std::string& fmt, const CallArgs& args);

// Python slicing of a code-point sequence: clamps like list[start:stop:step].
std::vector<size_t> slice_indices(int64_t length, const Value& start, const Value& stop, const Value& step,
                                  Status* status);

}  // namespace taco::jinja
