#include "io/safetensors.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/file_util.h"
#include "core/json_util.h"
#include "io/torch_bin_file.h"

namespace taco {
namespace {

// Real headers are a few MB even for models with tens of thousands of tensors; anything far larger is a
// corrupt length, and parsing it would only waste memory.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";
constexpr const char* kBinIndexName = "pytorch_model.bin.index.json";
constexpr const char* kBinName = "pytorch_model.bin";

std::string json_type(const nlohmann::json& value) { return value.type_name(); }

// Messages never dump header JSON: it can be megabytes long or nested deeply enough to exhaust the stack.
std::string shape_string(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Parser messages quote the offending token, which for an unterminated string can be the rest of the header.
std::string clipped(std::string text) {
    constexpr size_t kMaxChars = 300;
    if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
    return text;
}

// Parses one header entry (everything but __metadata__); checks types, dims and offsets against the data size.
Result<SafetensorsEntry> parse_entry(const std::string& name, const nlohmann::json& value, uint64_t data_bytes) {
    if (!value.is_object()) return error("entry is a JSON {}, not an object", json_type(value));
    SafetensorsEntry entry;
    entry.name = name;

    auto dtype_it = value.find("dtype");
    if (dtype_it == value.end()) return error("missing 'dtype'");
    if (!dtype_it->is_string()) return error("'dtype' is a JSON {}, not a string", json_type(*dtype_it));
    const std::string& dtype_name_str = dtype_it->get_ref<const std::string&>();
    std::optional<DType> dtype = dtype_from_safetensors_name(dtype_name_str);
    if (!dtype) return error("unknown dtype '{}'", dtype_name_str);
    entry.dtype = *dtype;

    auto shape_it = value.find("shape");
    if (shape_it == value.end()) return error("missing 'shape'");
    if (!shape_it->is_array()) return error("'shape' is a JSON {}, not an array", json_type(*shape_it));
    uint64_t numel = 1;
    for (size_t i = 0; i < shape_it->size(); ++i) {
        const nlohmann::json& dim = (*shape_it)[i];
        if (!dim.is_number_integer()) return error("shape dim {} is a non-integer JSON {}", i, json_type(dim));
        if (!dim.is_number_unsigned()) return error("shape dim {} is negative ({})", i, dim.get<int64_t>());
        uint64_t d = dim.get<uint64_t>();
        if (d > uint64_t(std::numeric_limits<int64_t>::max())) return error("shape dim {} is too large ({})", i, d);
        entry.shape.push_back(int64_t(d));
        if (__builtin_mul_overflow(numel, d, &numel)) {
            return error("shape {} overflows the element count", shape_string(entry.shape));
        }
    }
    uint64_t expected_bytes = 0;
    if (__builtin_mul_overflow(numel, uint64_t(dtype_size_bytes(entry.dtype)), &expected_bytes)) {
        return error("shape {} overflows the byte count", shape_string(entry.shape));
    }

    auto offsets_it = value.find("data_offsets");
    if (offsets_it == value.end()) return error("missing 'data_offsets'");
    const nlohmann::json& offsets = *offsets_it;
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        return error("'data_offsets' is not [begin, end] of non-negative integers (a JSON {}{})", json_type(offsets),
                     offsets.is_array() ? fmt::format(" of {} items", offsets.size()) : "");
    }
    entry.data_begin = offsets[0].get<uint64_t>();
    entry.data_end = offsets[1].get<uint64_t>();
    if (entry.data_begin > entry.data_end) {
        return error("data_offsets [{}, {}) begin past end", entry.data_begin, entry.data_end);
    }
    if (entry.data_end > data_bytes) {
        return error("data_offsets [{}, {}) end past the {} bytes of data", entry.data_begin, entry.data_end,
                     data_bytes);
    }
    if (entry.data_end - entry.data_begin != expected_bytes) {
        return error("data_offsets [{}, {}) hold {} bytes but {} {} needs {}", entry.data_begin, entry.data_end,
                     entry.data_end - entry.data_begin, dtype_name_str, shape_string(entry.shape), expected_bytes);
    }
    return entry;
}

Result<std::map<std::string, std::string>> parse_metadata(const nlohmann::json& value) {
    if (!value.is_object()) return error("'__metadata__' is a JSON {}, not an object", json_type(value));
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        if (!item.is_string()) return error("'__metadata__' key '{}' is a JSON {}, not a string", key, json_type(item));
        metadata[key] = item.get<std::string>();
    }
    return metadata;
}

// Tensors must not share bytes; empty tensors occupy none, so they never overlap.
Status check_no_overlap(const std::map<std::string, SafetensorsEntry>& entries) {
    std::vector<const SafetensorsEntry*> sorted;
    for (const auto& [name, entry] : entries) {
        if (entry.data_end > entry.data_begin) sorted.push_back(&entry);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->data_begin < b->data_begin; });
    for (size_t i = 1; i < sorted.size(); ++i) {
        const SafetensorsEntry& prev = *sorted[i - 1];
        const SafetensorsEntry& next = *sorted[i];
        if (next.data_begin < prev.data_end) {
            return error("tensor '{}': data_offsets [{}, {}) overlap tensor '{}' at [{}, {})", next.name,
                         next.data_begin, next.data_end, prev.name, prev.data_begin, prev.data_end);
        }
    }
    return Status::ok();
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
    std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
    file->path_ = path;
    TACO_ASSIGN_OR_RETURN(file->mapping_, MappedFile::open(path));
    const uint64_t file_bytes = file->mapping_->bytes().size();
    if (file_bytes < 8) return error("{}: file is {} bytes, shorter than the 8-byte header length", path, file_bytes);
    const uint8_t* base = file->mapping_->bytes().data();

    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | base[i];
    if (header_bytes > kMaxHeaderBytes) {
        return error("{}: header length {} exceeds the {}-byte limit", path, header_bytes, kMaxHeaderBytes);
    }
    if (header_bytes > file_bytes - 8) {
        return error("{}: header length {} past the end of the file ({} bytes)", path, header_bytes, file_bytes);
    }
    const char* header_begin = reinterpret_cast<const char*>(base + 8);
    uint64_t data_bytes = file_bytes - 8 - header_bytes;
    file->data_ = base + 8 + header_bytes;

    auto parsed = parse_json(std::string_view(header_begin, header_bytes));
    if (!parsed) {
        std::string message = parsed.status().message();
        if (message.rfind("invalid JSON: ", 0) == 0) message.erase(0, 14);
        return error("{}: header is not valid JSON: {}", path, clipped(message));
    }
    const nlohmann::json& header = *parsed;
    if (!header.is_object()) return error("{}: header is a JSON {}, not an object", path, json_type(header));

    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            auto metadata = parse_metadata(value);
            if (!metadata) return metadata.status().with_context(path);
            file->metadata_ = std::move(metadata).value();
            continue;
        }
        auto entry = parse_entry(name, value, data_bytes);
        if (!entry) return entry.status().with_context(fmt::format("{}: tensor '{}'", path, name));
        file->entries_.emplace(name, std::move(entry).value());
    }
    TACO_RETURN_IF_ERROR(check_no_overlap(file->entries_).with_context(path));
    return file;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
}

Result<TensorView> SafetensorsFile::view(const std::string& name) const {
    const SafetensorsEntry* entry = find(name);
    if (entry == nullptr) return error("{}: tensor '{}' not in the file", path_, name);
    if (entry->shape.size() > size_t(kMaxDims)) {
        return error("{}: tensor '{}' has {} dims, more than the {} a TensorView holds", path_, name,
                     entry->shape.size(), kMaxDims);
    }
    TensorView view;
    // The mapping is read-only; TensorView has no const variant, so callers must not write through it.
    view.data = const_cast<uint8_t*>(data_ + entry->data_begin);
    view.dtype = entry->dtype;
    view.device = Device::kCpu;
    view.ndim = int(entry->shape.size());
    int64_t stride = 1;
    for (int d = view.ndim - 1; d >= 0; --d) {
        view.shape[d] = entry->shape[d];
        view.strides[d] = stride;
        stride *= entry->shape[d];
    }
    return view;
}

namespace {

Result<std::unique_ptr<TensorFile>> open_safetensors(const std::string& path) {
    TACO_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
    return std::unique_ptr<TensorFile>(std::move(file));
}

Result<std::unique_ptr<TensorFile>> open_torch_bin(const std::string& path) {
    TACO_ASSIGN_OR_RETURN(auto file, TorchBinFile::open(path));
    return std::unique_ptr<TensorFile>(std::move(file));
}

}  // namespace

// The index's weight_map is the tensor set; files in the folder that it does not name are ignored.
Status Checkpoint::open_index(const std::string& index_path, FileOpenerFn open_file) {
    TACO_ASSIGN_OR_RETURN(nlohmann::json index, read_json_file(index_path));
    if (!index.is_object()) return error("{}: index is a JSON {}, not an object", index_path, json_type(index));
    auto map_it = index.find("weight_map");
    if (map_it == index.end()) return error("{}: missing 'weight_map'", index_path);
    if (!map_it->is_object()) {
        return error("{}: 'weight_map' is a JSON {}, not an object", index_path, json_type(*map_it));
    }
    if (map_it->empty()) return error("{}: 'weight_map' is empty", index_path);
    std::map<std::string, size_t> shard_index;  // shard file name -> index into files_
    for (const auto& [name, shard] : map_it->items()) {
        if (!shard.is_string()) {
            return error("{}: tensor '{}' maps to a JSON {}, not a file name", index_path, name, json_type(shard));
        }
        if (shard.get_ref<const std::string&>().empty()) {
            return error("{}: tensor '{}' maps to an empty file name", index_path, name);
        }
        const std::string& shard_name = shard.get_ref<const std::string&>();
        auto [it, inserted] = shard_index.emplace(shard_name, files_.size());
        if (inserted) {
            std::string shard_path = join_path(dir_, shard_name);
            if (!file_exists(shard_path)) {
                return error("{}: shard '{}' (named by {} for tensor '{}') does not exist", dir_, shard_name,
                             index_path, name);
            }
            TACO_ASSIGN_OR_RETURN(auto file, open_file(shard_path));
            files_.push_back(std::move(file));
        }
        const TensorFile& file = *files_[it->second];
        if (!file.contains(name)) {
            return error("{}: tensor '{}' missing from its shard (named by {})", file.path(), name, index_path);
        }
        location_[name] = it->second;
    }
    // A shard holding a tensor that the index places in another shard makes the checkpoint ambiguous.
    for (size_t i = 0; i < files_.size(); ++i) {
        for (const std::string& name : files_[i]->tensor_names()) {
            auto loc = location_.find(name);
            if (loc != location_.end() && loc->second != i) {
                return error("{}: tensor '{}' is in two shards: {} and {}", dir_, name, files_[loc->second]->path(),
                             files_[i]->path());
            }
        }
    }
    return Status::ok();
}

Status Checkpoint::open_files(const std::vector<std::string>& paths, FileOpenerFn open_file) {
    for (const std::string& path : paths) {
        TACO_ASSIGN_OR_RETURN(auto file, open_file(path));
        size_t file_index = files_.size();
        for (const std::string& name : file->tensor_names()) {
            auto [it, inserted] = location_.emplace(name, file_index);
            if (!inserted) {
                return error("{}: tensor '{}' is in two files: {} and {}", dir_, name, files_[it->second]->path(),
                             path);
            }
        }
        files_.push_back(std::move(file));
    }
    return Status::ok();
}

Result<Checkpoint> Checkpoint::open_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return error("{}: not a directory", dir);

    Checkpoint checkpoint;
    checkpoint.dir_ = dir;
    std::string index_path = join_path(dir, kIndexName);
    if (file_exists(index_path)) {
        TACO_RETURN_IF_ERROR(checkpoint.open_index(index_path, open_safetensors));
        return checkpoint;
    }

    std::vector<std::string> paths;
    std::string single_path = join_path(dir, kSingleName);
    if (file_exists(single_path)) {
        paths.push_back(single_path);
    } else {
        for (const fs::directory_entry& item : fs::directory_iterator(dir, ec)) {
            if (item.path().extension() == ".safetensors" && item.is_regular_file(ec)) {
                paths.push_back(item.path().string());
            }
        }
        if (ec) return error("{}: cannot list the folder: {}", dir, ec.message());
        std::sort(paths.begin(), paths.end());
    }
    if (!paths.empty()) {
        TACO_RETURN_IF_ERROR(checkpoint.open_files(paths, open_safetensors));
        return checkpoint;
    }

    std::string bin_index_path = join_path(dir, kBinIndexName);
    if (file_exists(bin_index_path)) {
        TACO_RETURN_IF_ERROR(checkpoint.open_index(bin_index_path, open_torch_bin));
        return checkpoint;
    }
    std::string bin_path = join_path(dir, kBinName);
    if (file_exists(bin_path)) {
        TACO_RETURN_IF_ERROR(checkpoint.open_files({bin_path}, open_torch_bin));
        return checkpoint;
    }
    return error("{}: no {}, {}, *.safetensors, {} or {}", dir, kIndexName, kSingleName, kBinIndexName, kBinName);
}

Result<TensorView> Checkpoint::tensor(const std::string& name) const {
    auto it = location_.find(name);
    if (it == location_.end()) return error("{}: tensor '{}' missing from the checkpoint", dir_, name);
    return files_[it->second]->view(name);
}

std::vector<std::string> Checkpoint::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(location_.size());
    for (const auto& [name, index] : location_) names.push_back(name);
    return names;
}

}  // namespace taco
