#include "tools/cli/config_file.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

namespace taco::cli {
namespace {

using json = nlohmann::json;

bool is_one_of(const std::string& text, std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&](const char* w) { return text == w; });
}

// A plain scalar resolved as YAML 1.2's core schema does (quoted scalars stay strings).
json scalar_json(const YAML::Node& node) {
    const std::string text = node.Scalar();
    if (node.Tag() == "!") return text;  // quoted: a string
    if (is_one_of(text, {"true", "True", "TRUE"})) return true;
    if (is_one_of(text, {"false", "False", "FALSE"})) return false;
    if (is_one_of(text, {"", "~", "null", "Null", "NULL"})) return nullptr;
    try {
        size_t used = 0;
        const long long integer = std::stoll(text, &used, 10);
        if (used == text.size()) return integer;
        const double real = std::stod(text, &used);
        if (used == text.size() && std::isfinite(real)) return real;
    } catch (const std::exception&) {
    }
    return text;
}

json to_json(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Sequence: {
            json list = json::array();
            for (const YAML::Node& item : node) list.push_back(to_json(item));
            return list;
        }
        case YAML::NodeType::Map: {
            json map = json::object();
            for (const auto& entry : node) map[entry.first.as<std::string>()] = to_json(entry.second);
            return map;
        }
        case YAML::NodeType::Scalar: return scalar_json(node);
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined: return nullptr;
    }
    return nullptr;
}

// `--flag=value`, or `--flag ""` for an empty value (CLI11 reads `--flag=` as a flag waiting for its value).
void push_value(std::vector<std::string>& flags, const std::string& flag, const std::string& value) {
    if (value.empty()) {
        flags.push_back(flag);
        flags.push_back("");
    } else {
        flags.push_back(flag + "=" + value);
    }
}

// The option a command-line word names ("--max-model-len=8", "-q"), or null.
const CLI::Option* option_named(const CLI::App& command, const std::string& word) {
    if (word.size() < 2 || word[0] != '-') return nullptr;
    if (std::isdigit(uint8_t(word[1])) || word[1] == '.') return nullptr;  // a negative number
    return command.get_option_no_throw(word.substr(0, word.find('=')));
}

Result<std::vector<std::string>> flags_of_file(const CLI::App& command, const std::string& path,
                                               const std::set<const CLI::Option*>& given) {
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        return error("--config {}: cannot read the file", path);
    } catch (const YAML::Exception& e) {
        return error("--config {}: not valid YAML: line {}, column {}: {}", path, e.mark.line + 1, e.mark.column + 1,
                     e.msg);
    }
    if (root.IsNull()) return std::vector<std::string>{};  // an empty file
    if (!root.IsMap()) return error("--config {}: expected a map of flag names to values", path);
    std::vector<std::string> flags;
    std::set<std::string> seen;
    for (const auto& entry : root) {
        if (!entry.first.IsScalar()) return error("--config {}: a key is not a flag name", path);
        std::string name = entry.first.Scalar();
        std::string key = name;
        std::replace(name.begin(), name.end(), '_', '-');
        while (!name.empty() && name.front() == '-') name.erase(name.begin());
        const std::string flag = "--" + name;
        const CLI::Option* option = name.empty() || name == "config" ? nullptr : command.get_option_no_throw(flag);
        if (!option)
            return error("--config {}: unknown key '{}' (no flag {} of `{}`)", path, key, flag, command.get_name());
        if (!seen.insert(flag).second) return error("--config {}: key '{}' is given twice", path, key);
        if (given.count(option)) continue;  // the command line wins
        const json value = to_json(entry.second);
        if (value.is_null()) return error("--config {}: key '{}' has no value", path, key);
        if (option->get_expected_max() == 0) {  // a flag
            if (!value.is_boolean()) return error("--config {}: key '{}' is a flag: give true or false", path, key);
            if (value.get<bool>())
                flags.push_back(flag);
            else if (command.get_option_no_throw("--no-" + name) == option)
                flags.push_back("--no-" + name);
            continue;
        }
        if (value.is_object() || (value.is_array() && option->get_items_expected_max() <= 1)) {
            flags.push_back(flag + "=" + value.dump());  // a one-value flag that takes JSON
            continue;
        }
        // Scalars go as written: `revision: 1.10` stays "1.10".
        if (value.is_array()) {
            for (const YAML::Node& item : entry.second) {
                if (!item.IsScalar())
                    return error("--config {}: key '{}': each value of the list must be a scalar", path, key);
                push_value(flags, flag, item.Scalar());
            }
            continue;
        }
        push_value(flags, flag, entry.second.Scalar());
    }
    return flags;
}

}  // namespace

Result<std::vector<std::string>> expand_config_files(const CLI::App& command, std::vector<std::string> args) {
    auto start =
        std::find(args.begin() + std::min<ptrdiff_t>(1, ptrdiff_t(args.size())), args.end(), command.get_name());
    if (start == args.end()) return args;
    const size_t first = size_t(start - args.begin()) + 1;
    size_t end = size_t(std::find(args.begin() + ptrdiff_t(first), args.end(), "--") - args.begin());
    // The files named, taken out of the command line; the options the command line gives.
    std::vector<std::string> files;
    std::set<const CLI::Option*> given;
    for (size_t i = first; i < end;) {
        if (args[i] == "--config" || args[i].rfind("--config=", 0) == 0) {
            const bool inline_value = args[i] != "--config";
            if (!inline_value && i + 1 >= end) return error("--config needs a FILE.yaml");
            files.push_back(inline_value ? args[i].substr(9) : args[i + 1]);
            const size_t removed = inline_value ? 1 : 2;
            args.erase(args.begin() + ptrdiff_t(i), args.begin() + ptrdiff_t(i + removed));
            end -= removed;
            continue;
        }
        if (const CLI::Option* option = option_named(command, args[i])) given.insert(option);
        ++i;
    }
    std::vector<std::string> flags;
    for (const std::string& file : files) {
        TACO_ASSIGN_OR_RETURN(std::vector<std::string> from_file, flags_of_file(command, file, given));
        flags.insert(flags.end(), from_file.begin(), from_file.end());
    }
    args.insert(args.begin() + ptrdiff_t(end), flags.begin(), flags.end());
    return args;
}

}  // namespace taco::cli
