#include "io/torch_bin_file.h"

#include <fmt/ranges.h>

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

// Checks one record against its storage and returns where its bytes are.
Result<TorchBinEntry> place_tensor(const TorchTensorRecord& record, const ZipEntry& storage) {
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
    entry.data_offset = storage.data_offset + offset_bytes;
    entry.data_bytes = tensor_bytes;
    if (entry.data_offset % type.element_bytes != 0) {
        return error("data at file offset {} is not aligned to its {}-byte elements", entry.data_offset,
                     type.element_bytes);
    }
    return entry;
}

}  // namespace

Result<std::unique_ptr<TorchBinFile>> TorchBinFile::open(const std::string& path) {
    std::unique_ptr<TorchBinFile> file(new TorchBinFile());
    TACO_ASSIGN_OR_RETURN(file->file_, MappedFile::open(path));
    std::span<const uint8_t> bytes = file->file_->bytes();
    // torch.save before 1.6 (and with _use_new_zipfile_serialization=False) wrote a pickle stream starting
    // with protocol 2 and the LONG1 magic number; those hold storages in a layout this reader does not parse.
    if (starts_with(bytes, "\x80\x02\x8a\x0a")) {
        return error(
            "{}: legacy torch.save format (not a ZIP archive) is not supported; re-save it with "
            "torch >= 1.6 or convert it to safetensors",
            path);
    }
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

    std::map<std::string, const TorchStorageRef*> storages;  // key -> first reference, to check the others
    for (const TorchTensorRecord& record : records) {
        std::string context = fmt::format("{}: tensor '{}'", path, record.name);
        auto [it, inserted] = storages.emplace(record.storage.key, &record.storage);
        if (!inserted && (it->second->type != record.storage.type || it->second->numel != record.storage.numel)) {
            return error("{}: storage '{}' is {} x {} here but {} x {} elsewhere", context, record.storage.key,
                         record.storage.numel, record.storage.type->storage_name, it->second->numel,
                         it->second->type->storage_name);
        }
        std::string storage_name = root + "/data/" + record.storage.key;
        const ZipEntry* storage = zip.find(storage_name);
        if (storage == nullptr) return error("{}: storage record '{}' is missing", context, storage_name);
        auto entry = place_tensor(record, *storage);
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
    view.data = const_cast<uint8_t*>(file_->bytes().data() + entry.data_offset);
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
