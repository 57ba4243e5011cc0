#include "io/pickle_reader.h"

#include <array>
#include <cstring>
#include <set>
#include <unordered_map>

namespace taco {
namespace {

constexpr std::array<TorchScalarType, 14> kTorchTypes = {{
    {"FloatStorage", "float32", 4, DType::kF32},
    {"HalfStorage", "float16", 2, DType::kF16},
    {"BFloat16Storage", "bfloat16", 2, DType::kBF16},
    {"LongStorage", "int64", 8, DType::kI64},
    {"IntStorage", "int32", 4, DType::kI32},
    {"CharStorage", "int8", 1, DType::kI8},
    {"ByteStorage", "uint8", 1, DType::kU8},
    // taco has no bool dtype; torch stores bools as one byte of 0 or 1, which is exactly U8.
    {"BoolStorage", "bool", 1, DType::kU8},
    {"DoubleStorage", "float64", 8, std::nullopt},
    {"ShortStorage", "int16", 2, std::nullopt},
    {"ComplexFloatStorage", "complex64", 8, std::nullopt},
    {"ComplexDoubleStorage", "complex128", 16, std::nullopt},
    {"", "float8_e4m3fn", 1, DType::kF8E4M3},
    {"", "float8_e5m2", 1, DType::kF8E5M2},
}};
constexpr TorchScalarType kUntypedStorage = {"UntypedStorage", "", 1, DType::kU8};

// A crafted pickle could ask for billions of tiny objects; real state dicts need about 20 per tensor.
constexpr size_t kMaxValues = size_t(1) << 22;
// Bounds the copies REDUCE makes, so a memoized huge tuple reused many times cannot cost quadratic time.
constexpr size_t kMaxArgs = 8;
constexpr size_t kMaxDimsInPickle = 64;
constexpr size_t kMaxGlobalNameBytes = 256;

enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::kNone: return "None";
        case Kind::kBool: return "bool";
        case Kind::kInt: return "int";
        case Kind::kFloat: return "float";
        case Kind::kString: return "str";
        case Kind::kTuple: return "tuple";
        case Kind::kList: return "list";
        case Kind::kDict: return "dict";
        case Kind::kGlobal: return "global";
        case Kind::kStorage: return "storage";
        case Kind::kTensor: return "tensor";
    }
    return "?";
}

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

Value make_value(Kind kind, int64_t integer = 0) {
    Value value;
    value.kind = kind;
    value.integer = integer;
    return value;
}
Value make_string(std::string text) {
    Value value = make_value(Kind::kString);
    value.text = std::move(text);
    return value;
}
Value make_tuple(std::vector<uint32_t> items) {
    Value value = make_value(Kind::kTuple);
    value.items = std::move(items);
    return value;
}
Value make_record(Kind kind, size_t record) {
    Value value = make_value(kind);
    value.record = uint32_t(record);
    return value;
}

class Machine {
public:
    Machine(const std::string& label, std::span<const uint8_t> bytes) : label_(label), bytes_(bytes) {}

    Result<std::vector<TorchTensorRecord>> run() {
        Status status = execute();
        if (!status.is_ok()) return status.with_context(fmt::format("{}: data.pkl offset {}", label_, op_pos_));
        return state_dict();
    }

private:
    Status execute();
    Status step(uint8_t op);
    Result<std::vector<TorchTensorRecord>> state_dict();

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

Status Machine::execute() {
    while (!result_) {
        op_pos_ = pos_;
        if (pos_ >= bytes_.size()) return error("truncated: no STOP opcode");
        TACO_RETURN_IF_ERROR(step(bytes_[pos_++]));
    }
    return Status::ok();
}

Status Machine::step(uint8_t op) {
    switch (op) {
        case 0x80: {  // PROTO
            TACO_ASSIGN_OR_RETURN(uint64_t proto, read_le(1));
            if (proto < 2 || proto > 5) return error("pickle protocol {} is not supported (2 to 5 are)", proto);
            return Status::ok();
        }
        case 0x95:  // FRAME: a length prefix for buffering; the frame's opcodes follow inline
            return read_le(8).status();
        case '}': return push(make_value(Kind::kDict));
        case ']': return push(make_value(Kind::kList));
        case ')': return push(make_value(Kind::kTuple));
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
            size_t n = size_t(op - 0x84);
            if (stack_.size() - floor() < n) return error("stack underflow");
            std::vector<uint32_t> items(stack_.end() - std::ptrdiff_t(n), stack_.end());
            stack_.resize(stack_.size() - n);
            return push(make_tuple(std::move(items)));
        }
        case 't': {
            TACO_ASSIGN_OR_RETURN(std::vector<uint32_t> items, pop_to_mark());
            return push(make_tuple(std::move(items)));
        }
        case '(': marks_.push_back(stack_.size()); return Status::ok();
        case 'X':
        case 0x8c:
        case 0x8d: {  // BINUNICODE (4-byte length), SHORT_BINUNICODE (1), BINUNICODE8 (8)
            TACO_ASSIGN_OR_RETURN(uint64_t len, read_le(op == 'X' ? 4 : op == 0x8c ? 1 : 8));
            TACO_ASSIGN_OR_RETURN(std::string text, read_bytes(len));
            return push(make_string(std::move(text)));
        }
        case 'J': {
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(4));
            return push(make_value(Kind::kInt, int32_t(uint32_t(v))));
        }
        case 'K':
        case 'M': {  // BININT1, BININT2: unsigned
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(op == 'K' ? 1 : 2));
            return push(make_value(Kind::kInt, int64_t(v)));
        }
        case 0x8a: {  // LONG1: n-byte two's complement, little-endian
            TACO_ASSIGN_OR_RETURN(uint64_t n, read_le(1));
            if (n > 8) return error("LONG1 of {} bytes does not fit in 64 bits", n);
            TACO_ASSIGN_OR_RETURN(uint64_t v, read_le(size_t(n)));
            if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t(0) << (8 * n);  // sign-extend
            return push(make_value(Kind::kInt, int64_t(v)));
        }
        case 0x88: return push(make_value(Kind::kBool, 1));
        case 0x89: return push(make_value(Kind::kBool, 0));
        case 'N': return push(make_value(Kind::kNone));
        case 'G': {  // BINFLOAT, big-endian; kept only so that such values can sit in ignored metadata
            TACO_RETURN_IF_ERROR(read_le(8).status());
            return push(make_value(Kind::kFloat));
        }
        case 'q': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(1));
            return memo_put(index);
        }
        case 'r': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(4));
            return memo_put(index);
        }
        case 0x94: return memo_put(memo_.size());  // MEMOIZE
        case 'h': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(1));
            return memo_get(index);
        }
        case 'j': {
            TACO_ASSIGN_OR_RETURN(uint64_t index, read_le(4));
            return memo_get(index);
        }
        case 's': {  // SETITEM
            TACO_ASSIGN_OR_RETURN(uint32_t value, pop());
            TACO_ASSIGN_OR_RETURN(uint32_t key, pop());
            TACO_ASSIGN_OR_RETURN(uint32_t dict, top());
            if (values_[dict].kind != Kind::kDict) return error("SETITEM on a {}", kind_name(values_[dict].kind));
            values_[dict].items.insert(values_[dict].items.end(), {key, value});
            return Status::ok();
        }
        case 'u': {  // SETITEMS
            TACO_ASSIGN_OR_RETURN(std::vector<uint32_t> items, pop_to_mark());
            TACO_ASSIGN_OR_RETURN(uint32_t dict, top());
            if (values_[dict].kind != Kind::kDict) return error("SETITEMS on a {}", kind_name(values_[dict].kind));
            if (items.size() % 2 != 0)
                return error("SETITEMS with an odd number ({}) of keys and values", items.size());
            values_[dict].items.insert(values_[dict].items.end(), items.begin(), items.end());
            return Status::ok();
        }
        case 'a':
        case 'e': {  // APPEND, APPENDS
            std::vector<uint32_t> items;
            if (op == 'a') {
                TACO_ASSIGN_OR_RETURN(uint32_t item, pop());
                items.push_back(item);
            } else {
                TACO_ASSIGN_OR_RETURN(items, pop_to_mark());
            }
            TACO_ASSIGN_OR_RETURN(uint32_t list, top());
            if (values_[list].kind != Kind::kList) return error("APPEND on a {}", kind_name(values_[list].kind));
            values_[list].items.insert(values_[list].items.end(), items.begin(), items.end());
            return Status::ok();
        }
        case 'c': {  // GLOBAL "module\nname\n"
            TACO_ASSIGN_OR_RETURN(std::string module, read_line());
            TACO_ASSIGN_OR_RETURN(std::string name, read_line());
            return global(module, name);
        }
        case 0x93: {  // STACK_GLOBAL
            TACO_ASSIGN_OR_RETURN(uint32_t name, pop_kind(Kind::kString, "STACK_GLOBAL name"));
            TACO_ASSIGN_OR_RETURN(uint32_t module, pop_kind(Kind::kString, "STACK_GLOBAL module"));
            return global(values_[module].text, values_[name].text);
        }
        case 'R': return reduce();
        case 'Q': return persistent_id();
        case 'b': {  // BUILD: an OrderedDict's state is its attributes (state_dict()._metadata), not tensors
            TACO_RETURN_IF_ERROR(pop().status());
            TACO_ASSIGN_OR_RETURN(uint32_t target, top());
            if (values_[target].kind != Kind::kDict) return error("BUILD on a {}", kind_name(values_[target].kind));
            return Status::ok();
        }
        case '.': {
            TACO_ASSIGN_OR_RETURN(uint32_t id, pop());
            result_ = id;
            return Status::ok();
        }
        default: break;
    }
    if (op >= 0x20 && op < 0x7f) return error("unsupported pickle opcode 0x{:02x} ('{}')", op, char(op));
    return error("unsupported pickle opcode 0x{:02x}", op);
}

Status Machine::global(const std::string& module, const std::string& name) {
    Value value = make_value(Kind::kGlobal);
    value.text = module + "." + name;
    if (module == "collections" && name == "OrderedDict") {
        value.callable = Callable::kOrderedDict;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
        value.callable = Callable::kRebuildTensorV2;
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v3") {
        value.callable = Callable::kRebuildTensorV3;
    } else if (module == "torch._utils" && (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")) {
        value.callable = Callable::kRebuildParameter;
    } else if ((module == "torch" || module == "torch.storage" || module == "torch.cuda") &&
               torch_type_by_storage_name(name) != nullptr) {
        value.type = torch_type_by_storage_name(name);
    } else if (module == "torch" && torch_type_by_dtype_name(name) != nullptr) {
        value.type = torch_type_by_dtype_name(name);
    } else {
        return error("refuses to load global '{}' (only tensor records are allowed)", value.text);
    }
    return push(std::move(value));
}

Status Machine::reduce() {
    TACO_ASSIGN_OR_RETURN(uint32_t args_id, pop_kind(Kind::kTuple, "REDUCE arguments"));
    TACO_ASSIGN_OR_RETURN(uint32_t callable_id, pop_kind(Kind::kGlobal, "REDUCE callable"));
    if (values_[args_id].items.size() > kMaxArgs) {
        return error("'{}' called with {} arguments", values_[callable_id].text, values_[args_id].items.size());
    }
    const std::vector<uint32_t> args = values_[args_id].items;  // a copy: pushes below may reallocate values_
    const Value& callable = values_[callable_id];
    switch (callable.callable) {
        case Callable::kOrderedDict:
            if (!args.empty()) return error("OrderedDict called with {} arguments, expected none", args.size());
            return push(make_value(Kind::kDict));
        case Callable::kRebuildTensorV2:
        case Callable::kRebuildTensorV3: {
            TACO_ASSIGN_OR_RETURN(TorchTensorRecord record,
                                  rebuild_tensor(args, callable.callable == Callable::kRebuildTensorV3));
            tensors_.push_back(std::move(record));
            return push(make_record(Kind::kTensor, tensors_.size() - 1));
        }
        case Callable::kRebuildParameter:
            // (data, requires_grad, backward_hooks[, state]): a Parameter is its data tensor here.
            if (args.size() < 3 || args.size() > 4 || values_[args[0]].kind != Kind::kTensor) {
                return error("{} needs (tensor, requires_grad, hooks[, state])", callable.text);
            }
            stack_.push_back(args[0]);
            return Status::ok();
        case Callable::kNone: break;
    }
    return error("global '{}' cannot be called", callable.text);
}

Status Machine::persistent_id() {
    TACO_ASSIGN_OR_RETURN(uint32_t pid, pop_kind(Kind::kTuple, "persistent id"));
    const std::vector<uint32_t>& f = values_[pid].items;
    if (f.size() != 5 || values_[f[0]].kind != Kind::kString || values_[f[0]].text != "storage") {
        return error("persistent id is not ('storage', type, key, location, numel)");
    }
    const Value& type = values_[f[1]];
    const Value& key = values_[f[2]];
    const Value& location = values_[f[3]];
    const Value& numel = values_[f[4]];
    if (type.kind != Kind::kGlobal || type.type == nullptr || type.type->storage_name.empty()) {
        return error("persistent id type is a {} '{}', not a torch storage type", kind_name(type.kind), type.text);
    }
    if (key.kind != Kind::kString || location.kind != Kind::kString || numel.kind != Kind::kInt || numel.integer < 0) {
        return error("persistent id fields are ({}, {}, {}), not (str key, str location, int numel >= 0)",
                     kind_name(key.kind), kind_name(location.kind), kind_name(numel.kind));
    }
    storages_.push_back({key.text, type.type, location.text, uint64_t(numel.integer)});
    return push(make_record(Kind::kStorage, storages_.size() - 1));
}

Result<std::vector<int64_t>> Machine::int_tuple(uint32_t id, const char* what) {
    const Value& tuple = values_[id];
    if (tuple.kind != Kind::kTuple) return error("{} is a {}, not a tuple", what, kind_name(tuple.kind));
    if (tuple.items.size() > kMaxDimsInPickle) return error("{} has {} dims", what, tuple.items.size());
    std::vector<int64_t> out;
    for (uint32_t item : tuple.items) {
        if (values_[item].kind != Kind::kInt || values_[item].integer < 0) {
            return error("{} holds a {} that is not an int >= 0", what, kind_name(values_[item].kind));
        }
        out.push_back(values_[item].integer);
    }
    return out;
}

// v2: (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
// v3: (untyped storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
Result<TorchTensorRecord> Machine::rebuild_tensor(const std::vector<uint32_t>& args, bool v3) {
    size_t base = v3 ? 7 : 6;
    if (args.size() != base && args.size() != base + 1) {
        return error("_rebuild_tensor_v{} called with {} arguments, expected {} or {}", v3 ? 3 : 2, args.size(), base,
                     base + 1);
    }
    const Value& storage = values_[args[0]];
    const Value& offset = values_[args[1]];
    if (storage.kind != Kind::kStorage) return error("tensor storage is a {}, not a storage", kind_name(storage.kind));
    if (offset.kind != Kind::kInt || offset.integer < 0) return error("tensor storage_offset is not an int >= 0");
    TorchTensorRecord record;
    record.storage = storages_[storage.record];
    record.type = record.storage.type;
    record.storage_offset = uint64_t(offset.integer);
    TACO_ASSIGN_OR_RETURN(record.shape, int_tuple(args[2], "tensor size"));
    TACO_ASSIGN_OR_RETURN(record.strides, int_tuple(args[3], "tensor stride"));
    if (record.shape.size() != record.strides.size()) {
        return error("tensor size has {} dims but stride {}", record.shape.size(), record.strides.size());
    }
    if (values_[args[4]].kind != Kind::kBool) return error("tensor requires_grad is not a bool");
    const Value& hooks = values_[args[5]];
    if (hooks.kind != Kind::kDict || !hooks.items.empty()) return error("tensor backward_hooks is not an empty dict");
    if (v3) {
        const Value& dtype = values_[args[6]];
        if (dtype.kind != Kind::kGlobal || dtype.type == nullptr || dtype.type->dtype_name.empty()) {
            return error("_rebuild_tensor_v3 dtype is not a torch dtype");
        }
        if (record.storage.type != &kUntypedStorage) return error("_rebuild_tensor_v3 of a typed storage");
        record.type = dtype.type;
    }
    // metadata (get_tensor_metadata) is a dict of flags such as conjugation; plain weights have none.
    if (args.size() == base + 1) {
        const Value& metadata = values_[args[base]];
        if (metadata.kind != Kind::kDict || !metadata.items.empty()) {
            return error(
                "tensor metadata is a non-empty {} (conjugated or otherwise special tensors are not supported)",
                kind_name(metadata.kind));
        }
    }
    return record;
}

Result<std::vector<TorchTensorRecord>> Machine::state_dict() {
    const Value& root = values_[*result_];
    if (root.kind != Kind::kDict) {
        return error("{}: data.pkl holds a {}, not a state dict (a dict of tensors)", label_, kind_name(root.kind));
    }
    std::vector<TorchTensorRecord> records;
    std::set<std::string> names;
    for (size_t i = 0; i < root.items.size(); i += 2) {
        const Value& key = values_[root.items[i]];
        const Value& value = values_[root.items[i + 1]];
        if (key.kind != Kind::kString)
            return error("{}: state dict key is a {}, not a str", label_, kind_name(key.kind));
        if (value.kind != Kind::kTensor) {
            return error("{}: state dict entry '{}' is a {}, not a tensor", label_, key.text, kind_name(value.kind));
        }
        if (!names.insert(key.text).second) return error("{}: state dict names '{}' twice", label_, key.text);
        TorchTensorRecord record = tensors_[value.record];
        record.name = key.text;
        records.push_back(std::move(record));
    }
    return records;
}

}  // namespace

const TorchScalarType* torch_type_by_storage_name(std::string_view name) {
    if (name == kUntypedStorage.storage_name) return &kUntypedStorage;
    for (const TorchScalarType& type : kTorchTypes) {
        if (!type.storage_name.empty() && type.storage_name == name) return &type;
    }
    return nullptr;
}

const TorchScalarType* torch_type_by_dtype_name(std::string_view name) {
    for (const TorchScalarType& type : kTorchTypes) {
        if (type.dtype_name == name) return &type;
    }
    return nullptr;
}

Result<std::vector<TorchTensorRecord>> read_torch_state_dict(const std::string& label,
                                                             std::span<const uint8_t> pickle) {
    return Machine(label, pickle).run();
}

}  // namespace taco
