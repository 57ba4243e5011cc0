#include "io/pickle_reader.h"

#include <array>
#include <cstring>
#include <set>

#include "io/pickle_machine.h"

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

// Bounds the copies REDUCE makes, so a memoized huge tuple reused many times cannot cost quadratic time.
constexpr size_t kMaxArgs = 8;
constexpr size_t kMaxDimsInPickle = 64;

}  // namespace

namespace pickle_internal {

Status PickleMachine::global(const std::string& module, const std::string& name) {
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

Status PickleMachine::reduce() {
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

Status PickleMachine::persistent_id() {
    TACO_ASSIGN_OR_RETURN(uint32_t pid, pop_kind(Kind::kTuple, "persistent id"));
    const std::vector<uint32_t>& f = values_[pid].items;
    if (f.size() < 5 || f.size() > 6 || values_[f[0]].kind != Kind::kString || values_[f[0]].text != "storage") {
        return error("persistent id is not ('storage', type, key, location, numel)");
    }
    // The legacy format adds view_metadata, a tuple only for storages that view others (torch < 0.4).
    if (f.size() == 6 && values_[f[5]].kind != Kind::kNone) {
        return error("persistent id describes a storage view (torch < 0.4), which is not supported");
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

Result<std::vector<int64_t>> PickleMachine::int_tuple(uint32_t id, const char* what) {
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
Result<TorchTensorRecord> PickleMachine::rebuild_tensor(const std::vector<uint32_t>& args, bool v3) {
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

Result<std::vector<TorchTensorRecord>> PickleMachine::state_dict() {
    const Value& root = values_[*result_];
    if (root.kind != Kind::kDict) {
        return error("{}: {} holds a {}, not a state dict (a dict of tensors)", label_, what_, kind_name(root.kind));
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

Result<std::vector<std::string>> PickleMachine::string_list() {
    const Value& root = values_[*result_];
    if (root.kind != Kind::kList) return error("{}: {} holds a {}, not a list", label_, what_, kind_name(root.kind));
    std::vector<std::string> out;
    for (uint32_t item : root.items) {
        if (values_[item].kind != Kind::kString) {
            return error("{}: {} holds a {}, not a str", label_, what_, kind_name(values_[item].kind));
        }
        out.push_back(values_[item].text);
    }
    return out;
}

}  // namespace pickle_internal

using pickle_internal::Kind;
using pickle_internal::PickleMachine;
using pickle_internal::Value;

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
    PickleMachine machine(label, "data.pkl", pickle);
    TACO_RETURN_IF_ERROR(machine.run());
    return machine.state_dict();
}

Result<TorchLegacyPickles> read_torch_legacy_pickles(const std::string& label, std::span<const uint8_t> bytes) {
    // PROTO 2, LONG1 of 10 bytes (torch's magic number 0x1950a86a20f9469cfc6c), STOP.
    constexpr std::string_view kMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
    if (bytes.size() < kMagic.size() || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
        return error("{}: not a legacy torch.save file (no magic number)", label);
    }
    PickleMachine version(label, "protocol version pickle", bytes, kMagic.size());
    TACO_RETURN_IF_ERROR(version.run());
    if (version.root().kind != Kind::kInt || version.root().integer != 1001) {
        return error("{}: legacy protocol version is not 1001", label);
    }
    PickleMachine sys_info(label, "sys_info pickle", bytes, version.end());
    TACO_RETURN_IF_ERROR(sys_info.run());
    const Value* little_endian = sys_info.root_item("little_endian");
    if (little_endian == nullptr || little_endian->kind != Kind::kBool || little_endian->integer != 1) {
        return error("{}: sys_info does not say little_endian=True (big-endian checkpoints are not supported)", label);
    }
    PickleMachine main(label, "state dict pickle", bytes, sys_info.end());
    TACO_RETURN_IF_ERROR(main.run());
    TorchLegacyPickles out;
    TACO_ASSIGN_OR_RETURN(out.records, main.state_dict());
    PickleMachine keys(label, "storage key pickle", bytes, main.end());
    TACO_RETURN_IF_ERROR(keys.run());
    TACO_ASSIGN_OR_RETURN(out.storage_keys, keys.string_list());
    out.data_offset = keys.end();
    return out;
}

}  // namespace taco
