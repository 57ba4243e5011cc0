#include "io/torch_bin_file.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "io/zip_reader.h"

namespace taco {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

bool starts_with(std::span<const uint8_t> bytes, std::string_view prefix) {
    return bytes.size() >= prefix.size() && std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0;
}

// The one "<root>/data.pkl" of the archive; torch names <root> after the file ("archive" for buffers).
Result<std::string> find_root(const std::string& path, const ZipReader& zip) {
    std::string root;
    for (const auto& [name, entry] : zip.entries()) {
        size_t slash = name.find('/');
        if (slash == std::string::npos || name.substr(slash) != "/data.pkl") continue;
        if (!root.empty())
            return error("{}: two data.pkl records ('{}/' and '{}/')", path, root, name.substr(0, slash));
        root = name.substr(0, slash);
    }
    if (root.empty()) {
        return error("{}: no <root>/data.pkl record: a ZIP archive, but not one written by torch.save", path);
    }
    return root;
}

// Where a storage's bytes lie in the file.
struct StorageBytes {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
};

// Checks one record against its storage and returns where its bytes are.
Result<TorchBinEntry> place_tensor(const TorchTensorRecord& record, const StorageBytes& storage) {
    const TorchScalarType& type = *record.type;
    uint64_t storage_bytes = 0;
    if (__builtin_mul_overflow(record.storage.numel, uint64_t(record.storage.type->element_bytes), &storage_bytes) ||
        storage_bytes != storage.size) {
        return error("storage '{}' holds {} bytes, but {} elements of {} need {}", record.storage.key, storage.size,
                     record.storage.numel, record.storage.type->storage_name, storage_bytes);
    }
    uint64_t numel = 1;
    for (int64_t dim : record.shape) {
        if (__builtin_mul_overflow(numel, uint64_t(dim), &numel)) {
            return error("size {} overflows the element count", shape_string(record.shape));
        }
    }
    // Dims of size 1 may carry any stride; other strides must be those of a row-major layout.
    uint64_t expected = 1;
    for (size_t d = record.shape.size(); d-- > 0;) {
        if (numel != 0 && record.shape[d] != 1 && uint64_t(record.strides[d]) != expected) {
            return error("size {} with stride {} is not contiguous (only contiguous tensors are supported)",
                         shape_string(record.shape), shape_string(record.strides));
        }
        expected *= uint64_t(record.shape[d]);  // cannot overflow: bounded by numel, or numel is 0
    }
    uint64_t offset_bytes = 0;
    uint64_t tensor_bytes = 0;
    uint64_t end_bytes = 0;
    if (__builtin_mul_overflow(record.storage_offset, uint64_t(type.element_bytes), &offset_bytes) ||
        __builtin_mul_overflow(numel, uint64_t(type.element_bytes), &tensor_bytes) ||
        __builtin_add_overflow(offset_bytes, tensor_bytes, &end_bytes) || end_bytes > storage_bytes) {
        return error("offset {} + size {} runs past the end of storage '{}' ({} elements)", record.storage_offset,
                     shape_string(record.shape), record.storage.key, record.storage.numel);
    }
    TorchBinEntry entry;
    entry.type = &type;
    entry.shape = record.shape;
    entry.data = storage.data + offset_bytes;
    entry.data_bytes = tensor_bytes;
    if (reinterpret_cast<uintptr_t>(entry.data) % type.element_bytes != 0) {
        return error("data at storage offset {} is not aligned to its {}-byte elements", offset_bytes,
                     type.element_bytes);
    }
    return entry;
}

// Records and their storages from the ZIP format: storage <key> is the record <root>/data/<key>.
Result<std::vector<TorchTensorRecord>> read_zip(const std::string& path, std::span<const uint8_t> bytes,
                                                std::map<std::string, StorageBytes>& storages) {
    TACO_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::parse(path, bytes));
    TACO_ASSIGN_OR_RETURN(std::string root, find_root(path, zip));
    if (const ZipEntry* order = zip.find(root + "/byteorder")) {
        TACO_ASSIGN_OR_RETURN(std::span<const uint8_t> text, zip.verified_contents(*order));
        if (std::string_view(reinterpret_cast<const char*>(text.data()), text.size()) != "little") {
            return error("{}: byteorder record is not 'little' (big-endian checkpoints are not supported)", path);
        }
    }
    TACO_ASSIGN_OR_RETURN(std::span<const uint8_t> pickle, zip.verified_contents(*zip.find(root + "/data.pkl")));
    TACO_ASSIGN_OR_RETURN(std::vector<TorchTensorRecord> records, read_torch_state_dict(path, pickle));
    for (const TorchTensorRecord& record : records) {
        std::string name = root + "/data/" + record.storage.key;
        const ZipEntry* entry = zip.find(name);
        if (entry == nullptr) {
            return error("{}: tensor '{}': storage record '{}' is missing", path, record.name, name);
        }
        storages[record.storage.key] = StorageBytes{bytes.data() + entry->data_offset, entry->size};
    }
    return records;
}

// Records and their storages from the legacy stream: after the pickles, each storage in key-list order as an
// int64 element count and its bytes. Element sizes come from the records, so every key must be used by one.
// Nothing aligns those bytes in the file, so each storage is copied into an aligned buffer of `copies`.
Result<std::vector<TorchTensorRecord>> read_legacy(const std::string& path, std::span<const uint8_t> bytes,
                                                   std::map<std::string, StorageBytes>& storages,
                                                   std::vector<Tensor>& copies) {
    TACO_ASSIGN_OR_RETURN(TorchLegacyPickles legacy, read_torch_legacy_pickles(path, bytes));
    std::map<std::string, const TorchStorageRef*> refs;
    for (const TorchTensorRecord& record : legacy.records) refs.emplace(record.storage.key, &record.storage);
    uint64_t pos = legacy.data_offset;
    for (const std::string& key : legacy.storage_keys) {
        auto ref = refs.find(key);
        if (ref == refs.end()) return error("{}: storage '{}' is not used by any tensor", path, key);
        if (bytes.size() - pos < 8) return error("{}: storage '{}': truncated before its size", path, key);
        uint64_t numel = 0;
        for (int i = 7; i >= 0; --i) numel = (numel << 8) | bytes[pos + i];
        pos += 8;
        uint64_t size = 0;
        if (__builtin_mul_overflow(numel, uint64_t(ref->second->type->element_bytes), &size) ||
            size > bytes.size() - pos) {
            return error("{}: storage '{}' of {} elements runs past the end of the file", path, key, numel);
        }
        if (storages.count(key) != 0) return error("{}: storage '{}' is listed twice", path, key);
        copies.push_back(Tensor::empty({int64_t(std::max<uint64_t>(size, 1))}, DType::kU8));
        std::memcpy(copies.back().as<uint8_t>(), bytes.data() + pos, size);
        storages[key] = StorageBytes{copies.back().as<uint8_t>(), size};
        pos += size;
    }
    for (const TorchTensorRecord& record : legacy.records) {
        if (storages.count(record.storage.key) == 0) {
            return error("{}: tensor '{}': storage '{}' is missing", path, record.name, record.storage.key);
        }
    }
    return std::move(legacy.records);
}

}  // namespace

Result<std::unique_ptr<TorchBinFile>> TorchBinFile::open(const std::string& path) {
    std::unique_ptr<TorchBinFile> file(new TorchBinFile());
    TACO_ASSIGN_OR_RETURN(file->file_, MappedFile::open(path));
    std::span<const uint8_t> bytes = file->file_->bytes();
    std::map<std::string, StorageBytes> storages;  // key -> bytes in the file
    // Both formats start with what they are: "PK" for ZIP, a pickle of protocol 2 with a LONG1 magic number for
    // the legacy stream.
    auto records = starts_with(bytes, "\x80\x02\x8a\x0a") ? read_legacy(path, bytes, storages, file->copies_)
                                                          : read_zip(path, bytes, storages);
    if (!records) return records.status();

    std::map<std::string, const TorchStorageRef*> refs;  // key -> first reference, to check the others
    for (const TorchTensorRecord& record : *records) {
        std::string context = fmt::format("{}: tensor '{}'", path, record.name);
        auto [it, inserted] = refs.emplace(record.storage.key, &record.storage);
        if (!inserted && (it->second->type != record.storage.type || it->second->numel != record.storage.numel)) {
            return error("{}: storage '{}' is {} x {} here but {} x {} elsewhere", context, record.storage.key,
                         record.storage.numel, record.storage.type->storage_name, it->second->numel,
                         it->second->type->storage_name);
        }
        auto entry = place_tensor(record, storages.at(record.storage.key));
        if (!entry) return entry.status().with_context(context);
        file->entries_.emplace(record.name, std::move(entry).value());
    }
    return file;
}

std::vector<std::string> TorchBinFile::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
}

Result<TensorView> TorchBinFile::view(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) return error("{}: tensor '{}' not in the file", path(), name);
    const TorchBinEntry& entry = it->second;
    if (!entry.type->dtype) {
        return error("{}: tensor '{}' has torch dtype {}, which taco does not support", path(), name,
                     entry.type->dtype_name);
    }
    if (entry.shape.size() > size_t(kMaxDims)) {
        return error("{}: tensor '{}' has {} dims, more than the {} a TensorView holds", path(), name,
                     entry.shape.size(), kMaxDims);
    }
    TensorView view;
    // The mapping is read-only; TensorView has no const variant, so callers must not write through it.
    view.data = const_cast<uint8_t*>(entry.data);
    view.dtype = *entry.type->dtype;
    view.device = Device::kCpu;
    view.ndim = int(entry.shape.size());
    int64_t stride = 1;
    for (int d = view.ndim - 1; d >= 0; --d) {
        view.shape[d] = entry.shape[d];
        view.strides[d] = stride;
        stride *= entry.shape[d];
    }
    return view;
}

}  // namespace taco
