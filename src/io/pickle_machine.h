// The stack machine behind pickle_reader.h (internal to src/io): values live in one arena and refer to each
// other by index, so no input can build cycles that leak or nesting that recurses. It decodes the opcodes that
// Python's pickler emits for dicts of tensors (protocols 2 to 5); GLOBAL, REDUCE and BINPERSID go to the
// torch-specific members defined in pickle_reader.cc, which build records and never call anything.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/pickle_reader.h"

namespace taco::pickle_internal {

// A crafted pickle could ask for billions of tiny objects; real state dicts need about 20 per tensor.
constexpr size_t kMaxValues = size_t(1) << 22;
constexpr size_t kMaxGlobalNameBytes = 256;

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };

const char* kind_name(Kind kind);

// Globals are data here: a callable global only names which record REDUCE builds.
enum class Callable : uint8_t { kNone, kOrderedDict, kRebuildTensorV2, kRebuildTensorV3, kRebuildParameter };

struct Value {
    Kind kind = Kind::kNone;
    int64_t integer = 0;                    // kBool, kInt
    std::string text;                       // kString; kGlobal: "module.name"
    std::vector<uint32_t> items;            // kTuple, kList; kDict: key, value, key, value, ...
    Callable callable = Callable::kNone;    // kGlobal
    const TorchScalarType* type = nullptr;  // kGlobal naming a storage type or dtype
    uint32_t record = 0;                    // kStorage: index into storages_; kTensor: index into tensors_
};

inline Value make_value(Kind kind, int64_t integer = 0) {
    Value value;
    value.kind = kind;
    value.integer = integer;
    return value;
}
inline Value make_string(std::string text) {
    Value value = make_value(Kind::kString);
    value.text = std::move(text);
    return value;
}
inline Value make_tuple(std::vector<uint32_t> items) {
    Value value = make_value(Kind::kTuple);
    value.items = std::move(items);
    return value;
}
inline Value make_record(Kind kind, size_t record) {
    Value value = make_value(kind);
    value.record = uint32_t(record);
    return value;
}

class PickleMachine {
public:
    // Runs one pickle starting at `start`; `what` names it in errors ("data.pkl").
    PickleMachine(const std::string& label, std::string_view what, std::span<const uint8_t> bytes, size_t start = 0)
        : label_(label), what_(what), bytes_(bytes), pos_(start) {}

    Status run() {
        Status status = execute();
        if (!status.is_ok()) return status.with_context(fmt::format("{}: {} offset {}", label_, what_, op_pos_));
        return Status::ok();
    }
    size_t end() const { return pos_; }  // just past STOP
    const Value& root() const { return values_[*result_]; }
    Result<std::vector<TorchTensorRecord>> state_dict();
    Result<std::vector<std::string>> string_list();
    // The value of `key` in a root dict with str keys, or null.
    const Value* root_item(std::string_view key) const {
        if (root().kind != Kind::kDict) return nullptr;
        for (size_t i = 0; i < root().items.size(); i += 2) {
            const Value& k = values_[root().items[i]];
            if (k.kind == Kind::kString && k.text == key) return &values_[root().items[i + 1]];
        }
        return nullptr;
    }

private:
    Status execute();
    Status step(uint8_t op);

    // --- reading the byte stream
    Result<uint64_t> read_le(size_t n) {
        if (bytes_.size() - pos_ < n) return error("truncated: {} more bytes needed", n);
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v |= uint64_t(bytes_[pos_ + i]) << (8 * i);
        pos_ += n;
        return v;
    }
    Result<std::string> read_bytes(uint64_t n) {
        if (bytes_.size() - pos_ < n) return error("truncated: string of {} bytes past the end", n);
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
        pos_ += n;
        return s;
    }
    Result<std::string> read_line() {
        std::string s;
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n') {
            if (s.size() >= kMaxGlobalNameBytes) return error("global name longer than {} bytes", kMaxGlobalNameBytes);
            s.push_back(char(bytes_[pos_++]));
        }
        if (pos_ == bytes_.size()) return error("truncated: global name has no end of line");
        ++pos_;
        return s;
    }

    // --- the stack
    Result<uint32_t> make(Value value) {
        if (values_.size() >= kMaxValues) return error("more than {} objects", kMaxValues);
        values_.push_back(std::move(value));
        return uint32_t(values_.size() - 1);
    }
    Status push(Value value) {
        TACO_ASSIGN_OR_RETURN(uint32_t id, make(std::move(value)));
        stack_.push_back(id);
        return Status::ok();
    }
    size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
    Result<uint32_t> pop() {
        if (stack_.size() <= floor()) return error("stack underflow");
        uint32_t id = stack_.back();
        stack_.pop_back();
        return id;
    }
    Result<uint32_t> top() const {
        if (stack_.size() <= floor()) return error("stack underflow");
        return stack_.back();
    }
    // Everything above the last MARK, which is removed.
    Result<std::vector<uint32_t>> pop_to_mark() {
        if (marks_.empty()) return error("no MARK on the stack");
        std::vector<uint32_t> items(stack_.begin() + std::ptrdiff_t(marks_.back()), stack_.end());
        stack_.resize(marks_.back());
        marks_.pop_back();
        return items;
    }
    Result<uint32_t> pop_kind(Kind kind, const char* what) {
        TACO_ASSIGN_OR_RETURN(uint32_t id, pop());
        if (values_[id].kind != kind)
            return error("{} is a {}, not a {}", what, kind_name(values_[id].kind), kind_name(kind));
        return id;
    }
    Status memo_put(uint64_t index) {
        TACO_ASSIGN_OR_RETURN(uint32_t id, top());
        memo_[index] = id;
        return Status::ok();
    }
    Status memo_get(uint64_t index) {
        auto it = memo_.find(index);
        if (it == memo_.end()) return error("memo entry {} was never stored", index);
        stack_.push_back(it->second);
        return Status::ok();
    }

    Status global(const std::string& module, const std::string& name);
    Status reduce();
    Status persistent_id();
    Result<TorchTensorRecord> rebuild_tensor(const std::vector<uint32_t>& args, bool v3);
    Result<std::vector<int64_t>> int_tuple(uint32_t id, const char* what);

    const std::string& label_;
    std::string_view what_;
    std::span<const uint8_t> bytes_;
    size_t pos_ = 0;
    size_t op_pos_ = 0;
    std::vector<Value> values_;
    std::vector<uint32_t> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint64_t, uint32_t> memo_;
    std::vector<TorchStorageRef> storages_;
    std::vector<TorchTensorRecord> tensors_;
    std::optional<uint32_t> result_;
};

}  // namespace taco::pickle_internal
