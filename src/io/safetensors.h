// Safetensors over mmap: one file (SafetensorsFile) and a model folder of one or more files (Checkpoint), which
// also reads pytorch_model.bin archives (TorchBinFile) when a folder has no safetensors.
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
#include "io/mapped_file.h"
#include "io/tensor_file.h"

namespace taco {

struct SafetensorsEntry {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    uint64_t data_begin = 0;  // relative to the start of the data section
    uint64_t data_end = 0;
};

class SafetensorsFile : public TensorFile {
public:
    ~SafetensorsFile() override = default;
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    // Maps the file read-only and validates the whole header (JSON, dtypes, shapes, offsets in range, no
    // overlaps, size == numel * dtype size).
    static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);

    const std::string& path() const override { return path_; }
    bool contains(const std::string& name) const override { return entries_.count(name) != 0; }
    std::vector<std::string> tensor_names() const override;
    const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const SafetensorsEntry* find(const std::string& name) const;
    // A view of the mapped bytes (read-only memory; do not write through it). Tensors of more than kMaxDims
    // dimensions are an error naming the tensor.
    Result<TensorView> view(const std::string& name) const override;

private:
    SafetensorsFile() = default;
    std::string path_;
    std::unique_ptr<MappedFile> mapping_;
    const uint8_t* data_ = nullptr;  // start of the data section
    std::map<std::string, SafetensorsEntry> entries_;
    std::map<std::string, std::string> metadata_;
};

// All the tensor files of a model folder, first found wins: `model.safetensors.index.json` (weight_map name ->
// shard file), `model.safetensors`, every `*.safetensors` in the folder, `pytorch_model.bin.index.json` (shards
// are torch.save archives), `pytorch_model.bin`. A missing shard, a tensor that the index names but its shard
// lacks, or a name in two files is an error.
class Checkpoint {
public:
    static Result<Checkpoint> open_dir(const std::string& dir);

    const std::string& dir() const { return dir_; }
    bool contains(const std::string& name) const { return location_.count(name) != 0; }
    // Error if absent: "<dir>: tensor 'name' missing from the checkpoint".
    Result<TensorView> tensor(const std::string& name) const;
    std::vector<std::string> tensor_names() const;  // sorted

private:
    using FileOpenerFn = Result<std::unique_ptr<TensorFile>> (*)(const std::string& path);
    Status open_index(const std::string& index_path, FileOpenerFn open_file);
    Status open_files(const std::vector<std::string>& paths, FileOpenerFn open_file);

    std::string dir_;
    std::vector<std::shared_ptr<TensorFile>> files_;
    std::map<std::string, size_t> location_;  // tensor name -> index into files_
};

}  // namespace taco
