// Safetensors over mmap: one file (SafetensorsFile) and a model folder of one or more files (Checkpoint).
// Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin,
// end)}, "__metadata__": {...}}, then the data; offsets are relative to the end of the header.
// Every malformed input is a Status naming the file and the tensor; nothing past the mapping is ever read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace taco {

struct SafetensorsEntry {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    uint64_t data_begin = 0;  // relative to the start of the data section
    uint64_t data_end = 0;
};

class SafetensorsFile {
public:
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    // Maps the file read-only and validates the whole header (JSON, dtypes, shapes, offsets in range, no
    // overlaps, size == numel * dtype size).
    static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);

    const std::string& path() const { return path_; }
    const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const SafetensorsEntry* find(const std::string& name) const;
    // A view of the mapped bytes (read-only memory; do not write through it). Tensors of more than kMaxDims
    // dimensions are an error naming the tensor.
    Result<TensorView> view(const std::string& name) const;

private:
    SafetensorsFile() = default;
    std::string path_;
    void* mapping_ = nullptr;
    size_t mapping_bytes_ = 0;
    const uint8_t* data_ = nullptr;  // start of the data section
    std::map<std::string, SafetensorsEntry> entries_;
    std::map<std::string, std::string> metadata_;
};

// All the safetensors of a model folder: `model.safetensors.index.json` (weight_map name -> shard file) if
// present, else `model.safetensors`, else every `*.safetensors` in the folder. A missing shard, a tensor that
// the index names but its shard lacks, or a name in two files is an error.
class Checkpoint {
public:
    static Result<Checkpoint> open_dir(const std::string& dir);

    const std::string& dir() const { return dir_; }
    bool contains(const std::string& name) const { return location_.count(name) != 0; }
    // Error if absent: "<dir>: tensor 'name' missing from the checkpoint".
    Result<TensorView> tensor(const std::string& name) const;
    std::vector<std::string> tensor_names() const;  // sorted

private:
    std::string dir_;
    std::vector<std::shared_ptr<SafetensorsFile>> files_;
    std::map<std::string, size_t> location_;  // tensor name -> index into files_
};

}  // namespace taco
