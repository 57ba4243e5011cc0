// A small JSON Schema validator for the tests, written independently of the grammar compiler: the random walks
// check that every text the masks allow validates against the schema it was compiled from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace taco::structured::testing {

// Empty when `value` validates against `schema` (root: the document $ref resolves in); else the first problem.
std::string validate_json(const nlohmann::ordered_json& value, const nlohmann::ordered_json& schema,
                          const nlohmann::ordered_json& root);

}  // namespace taco::structured::testing
