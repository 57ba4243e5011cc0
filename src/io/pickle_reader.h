// A restricted reader for the data.pkl record of a torch.save archive holding a state dict (a dict or
// collections.OrderedDict of name -> tensor). It interprets the pickle opcodes that Python's pickler emits for
// such objects (protocols 2 to 5) and nothing else, and never runs code: the only globals it accepts are an
// allow-list of names (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _v3 / _rebuild_parameter,
// torch.*Storage types, torch dtypes), each of which it turns into a plain record, never a call. Any other
// global, opcode or shape of data is an error naming the file and the offset.
//
// A tensor pickles as REDUCE(torch._utils._rebuild_tensor_v2, (storage, storage_offset, size, stride,
// requires_grad, backward_hooks[, metadata])) where storage is BINPERSID(('storage', torch.<T>Storage, key,
// location, numel)); the storage bytes are the archive record `data/<key>`. Float8 tensors use
// _rebuild_tensor_v3 with torch.UntypedStorage (numel in bytes) and the dtype as an extra argument.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace taco {

// A torch scalar type as pickles name it: by storage class (v2) or by dtype (v3).
struct TorchScalarType {
    std::string_view storage_name;  // "FloatStorage"
    std::string_view dtype_name;    // "float32"
    size_t element_bytes = 0;
    std::optional<DType> dtype;  // nullopt: readable (sizes check out) but not a taco dtype
};

const TorchScalarType* torch_type_by_storage_name(std::string_view name);  // also "UntypedStorage" (bytes)
const TorchScalarType* torch_type_by_dtype_name(std::string_view name);

struct TorchStorageRef {
    std::string key;                        // the archive record is data/<key>
    const TorchScalarType* type = nullptr;  // never null
    std::string location;                   // "cpu", "cuda:0": where it was saved from
    uint64_t numel = 0;                     // in elements of `type`
};

struct TorchTensorRecord {
    std::string name;
    TorchStorageRef storage;
    const TorchScalarType* type = nullptr;  // the tensor's own type: the storage's, or v3's dtype argument
    uint64_t storage_offset = 0;            // in elements of `type`
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;  // in elements
};

// `label` (the archive path) prefixes errors. Records come in the order of the pickle; names are unique.
Result<std::vector<TorchTensorRecord>> read_torch_state_dict(const std::string& label, std::span<const uint8_t> pickle);

// The legacy stream (torch < 1.6, or _use_new_zipfile_serialization=False): five pickles back to back (magic
// number, protocol version 1001, sys_info, the state dict, the storage keys), then for each key in that order
// its element count (int64, little-endian) and its raw bytes, starting at data_offset.
struct TorchLegacyPickles {
    std::vector<TorchTensorRecord> records;
    std::vector<std::string> storage_keys;
    uint64_t data_offset = 0;
};

Result<TorchLegacyPickles> read_torch_legacy_pickles(const std::string& label, std::span<const uint8_t> bytes);

}  // namespace taco
